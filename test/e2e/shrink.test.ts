// The start-up shrink (lib/platform/shrink.ts) on the real binary: SHRINK_AFTER_START_MS after start the kubelet
// gives back what adopting its pods allocated (Bun.shrink drops the compiled code), says so once, and keeps working:
// the pod it adopted stays Running and a pod added afterwards starts, on code compiled again.
import { expect } from "bun:test";
import { SHRINK_AFTER_START_MS } from "../../lib/platform/shrink.ts";
import { test } from "./harness-kubelet.ts";
import { describeOnRuntimes, staticPodNode } from "./harness-runtimes.ts";

const SHRUNK = /gave back the start-up's memory: RSS ([\d.]+) MB -> ([\d.]+) MB/;

describeOnRuntimes(
  "start-up shrink",
  (services, rt) => {
    const node = staticPodNode("shrink", services, rt, ["e2e-shrink-first", "e2e-shrink-later"]);
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
  },
  ["docker", "remote", "remote-1.7"],
);
