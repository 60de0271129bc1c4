// The start-up shrink (lib/platform/shrink.ts) on the real binary: SHRINK_AFTER_START_MS after start the kubelet
// gives back what adopting its pods allocated (Bun.shrink drops the compiled code), says so once, and keeps working:
// the pod it adopted stays Running and a pod added afterwards starts, on code compiled again. After a later burst
// (pods created after the start-up shrink) it shrinks again once the RSS has settled, and says so.
import { expect } from "bun:test";
import { BURST_CHECK_MS, MIN_SHRINK_INTERVAL_MS, SHRINK_AFTER_START_MS } from "../../lib/platform/shrink.ts";
import { killLiveKubelets, test } from "./harness-kubelet.ts";
import { describeOnRuntimes, staticPodNode } from "./harness-runtimes.ts";

const SHRUNK = /gave back the start-up's memory: RSS ([\d.]+) MB -> ([\d.]+) MB/;
const BURST_SHRUNK = /gave back a burst's memory: RSS ([\d.]+) MB -> ([\d.]+) MB in \d+ ms \(([\d.]+) MB above/;
/** Pods created at once after the start-up shrink: enough to leave the RSS more than BURST_GROWTH_BYTES up. */
const BURST = Array.from({ length: 30 }, (_, i) => `e2e-shrink-burst-${i}`);

describeOnRuntimes(
  "start-up shrink",
  (services, rt) => {
    const node = staticPodNode("shrink", services, rt, ["e2e-shrink-first", "e2e-shrink-later"]);
    const burstNode = staticPodNode("shrink-burst", services, rt, ["e2e-shrink-burst-first", ...BURST]);
    const idle = { containers: [{ name: "app", image: services.busybox, command: ["sleep", "3600"] }] };
    const running = (pod: { status?: { phase?: string } }) => pod.status?.phase === "Running";

    test(
      "the kubelet logs the memory it gave back after start once, and still starts a pod added afterwards",
      async () => {
        node.write("e2e-shrink-first", idle);
        const kubelet = await node.start();
        await kubelet.waitForPod("e2e-shrink-first", "Running", running, 60_000);
        const [, before, after] = await kubelet.waitFor(
          "the shrink's log line",
          () => SHRUNK.exec(kubelet.output),
          SHRINK_AFTER_START_MS + 30_000,
        );
        expect(Number(after)).toBeGreaterThan(0);
        expect(Number(after)).toBeLessThanOrEqual(Number(before));
        node.write("e2e-shrink-later", idle);
        await kubelet.waitForPod("e2e-shrink-later", "Running", running, 60_000);
        expect(running((await kubelet.pod("e2e-shrink-first"))!)).toBe(true);
        expect(kubelet.output.match(new RegExp(SHRUNK, "g"))).toHaveLength(1);
      },
      SHRINK_AFTER_START_MS + 150_000,
    );

    test(
      "pods created after the start-up shrink are given back once the RSS settles, and every pod keeps running",
      async () => {
        // A kubelet the test before left (it failed before its stop) would stop this one's pods.
        await killLiveKubelets();
        burstNode.write("e2e-shrink-burst-first", idle);
        const kubelet = await burstNode.start();
        await kubelet.waitFor("the start-up shrink", () => SHRUNK.exec(kubelet.output), SHRINK_AFTER_START_MS + 30_000);
        for (const name of BURST) burstNode.write(name, idle);
        for (const name of BURST) await kubelet.waitForPod(name, "Running", running, 300_000);
        const [, before, after, growth] = await kubelet.waitFor(
          "the burst's shrink",
          () => BURST_SHRUNK.exec(kubelet.output),
          MIN_SHRINK_INTERVAL_MS + 4 * BURST_CHECK_MS,
        );
        expect(Number(growth)).toBeGreaterThanOrEqual(8);
        expect(Number(after)).toBeLessThan(Number(before));
        for (const name of ["e2e-shrink-burst-first", ...BURST]) expect(running((await kubelet.pod(name))!)).toBe(true);
      },
      SHRINK_AFTER_START_MS + MIN_SHRINK_INTERVAL_MS + 600_000,
    );
  },
  ["docker", "remote", "remote-1.7"],
);
