// The node's readers (the resync, container GC, the log manager) take the runtime's last listing instead of listing
// again, the compiled binary against the real daemons: at idle they ask the runtime for almost no listing of their
// own (on 1.6 the relist's each second answers them, on 1.7 the event stream keeps one listing current, on Docker the
// Engine's events stream keeps the last reader's current), and still a new pod starts and a dead container beyond
// --maximum_dead_containers_per_container is collected.
import { afterAll, expect } from "bun:test";
import { type Kubelet, startKubelet, test } from "./harness-kubelet.ts";
import { describeOnRuntimes, writePod } from "./harness-runtimes.ts";
import { removeDir, tempDir } from "./harness.ts";

/** The window the readers' own lists are counted over: three resyncs (10 s) and three log manager passes. */
const WINDOW_MS = 30_000;

describeOnRuntimes(
  "the PLEG's listing shared with the node's readers",
  (services, rt) => {
    const manifests = tempDir("shared-listing-manifests");
    const rootDir = tempDir("shared-listing-root");
    const idle = ["e2e-share-a", "e2e-share-b", "e2e-share-c"];
    const pods = [...idle, "e2e-share-new", "e2e-share-exits"];
    let kubelet: Kubelet;
    afterAll(async () => {
      await kubelet?.stop("SIGKILL");
      await rt.removePods(...pods);
      removeDir(manifests);
      removeDir(rootDir);
    });
    const sleeping = (name: string) =>
      writePod(manifests, name, {
        terminationGracePeriodSeconds: 0,
        hostNetwork: true,
        containers: [{ name: "app", image: services.busybox, command: ["sleep", "3600"] }],
      });
    const running = (name: string) =>
      kubelet.waitForPod(name, "the app running", (p) => p.status?.containerStatuses?.[0]?.state?.running, 240_000);
    /**
     * The runtime's lists the kubelet made, by operation, and its PLEG's relists (on the CRI each one of each list,
     * beside the readers'; on Docker a relist is a reader's full list of containers, counted in list_containers).
     */
    const counts = async () => {
      const text = await (await kubelet.admin("/metrics")).text();
      const value = (pattern: string) => Number(text.match(new RegExp(`^${pattern} (\\S+)$`, "m"))?.[1] ?? 0);
      return {
        containers: value('kubelet_runtime_operations_total\\{operation_type="list_containers"\\}'),
        sandboxes: value('kubelet_runtime_operations_total\\{operation_type="list_podsandbox"\\}'),
        relists: value("kubelet_pleg_relist_duration_seconds_count"),
      };
    };

    test("at idle the readers list the runtime at most once or twice in 30 s besides the relist", async () => {
      for (const name of idle) sleeping(name);
      const gc = ["--maximum_dead_containers_per_container", "1"];
      kubelet = await startKubelet(["run", "-c", manifests, ...rt.flags(rootDir), ...gc]);
      for (const name of idle) await running(name);
      // Past the first minute's work (the walk of the new containers, the statuses settling, GC's first pass).
      await Bun.sleep(15_000);
      const before = await counts();
      await Bun.sleep(WINDOW_MS);
      const after = await counts();
      const relists = rt.name === "docker" ? 0 : after.relists - before.relists;
      // Without the shared listing: the resync's 3 + 3, the log manager's 3, and the walk's sized listing.
      const own = {
        containers: after.containers - before.containers - relists,
        sandboxes: after.sandboxes - before.sandboxes - relists,
      };
      expect(own.containers).toBeLessThanOrEqual(2);
      expect(own.sandboxes).toBeLessThanOrEqual(1);
      if (rt.name === "containerd 1.7") expect(relists).toBe(0);
      else if (rt.name === "containerd") expect(relists).toBeGreaterThanOrEqual(20);
    }, 360_000);

    test("a pod added at idle starts", async () => {
      sleeping("e2e-share-new");
      await running("e2e-share-new");
    }, 270_000);

    test("a container that keeps exiting has its older dead instances collected, the newest dead one kept", async () => {
      writePod(manifests, "e2e-share-exits", {
        terminationGracePeriodSeconds: 0,
        hostNetwork: true,
        containers: [{ name: "app", image: services.busybox, command: ["sh", "-c", "exit 3"] }],
      });
      const dead = async () =>
        (await rt.podContainers("e2e-share-exits")).filter((c) => c.state === "CONTAINER_EXITED").length;
      // Back-off 10 s, then 20 s: by the second restart two instances are dead, and GC (at start, then once a
      // minute) keeps only the newest dead one (--maximum_dead_containers_per_container 1).
      await kubelet.waitFor(
        "two restarts, the older dead instance collected",
        async () => {
          const status = (await kubelet.pod("e2e-share-exits"))?.status?.containerStatuses?.[0];
          return (status?.restartCount ?? 0) >= 2 && (await dead()) <= 1 ? true : undefined;
        },
        300_000,
      );
    }, 400_000);
  },
  ["docker", "remote", "remote-1.7"],
);
