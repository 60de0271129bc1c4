import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LABEL } from "../../container/runtime.ts";
import { FakeClock } from "../../testing/fake-clock.ts";
import { FakeRuntime } from "../../testing/fake-runtime.ts";
import { testPod } from "../../testing/pods.ts";
import type { FsStats } from "./filesystem.ts";
import { cgroupStats } from "../../testing/usage-samples.ts";
import { SAMPLE_MAX_AGE_MS, createStatsAnalyzer } from "./stats-analyzer.ts";
import { createSharedListing, STATS_LISTING_MAX_AGE_MS } from "../../container/shared-listing.ts";
import { KubeletError } from "../../api/types.ts";
import { silentLogger } from "../../log.ts";

const fs = (capacity: number, available: number): FsStats => ({
  capacityBytes: capacity,
  availableBytes: available,
  usedBytes: capacity - available,
  inodes: 1000,
  inodesFree: 400,
  inodesUsed: 600,
});

/** 8 GB of memory, 2 GB working set; a 100 GB node filesystem and a 50 GB image filesystem. */
const measureNode = async () => ({
  memory: { capacityBytes: 8e9, availableBytes: 6e9, workingSetBytes: 2e9 },
  nodeFs: fs(100e9, 40e9),
  imageFs: fs(50e9, 10e9),
  observations: {},
});

/** A node with no volumes, no processes and no interfaces to speak of, for tests about the pods' cgroups. */
const quietNode = {
  measureNode,
  emptyDirUsage: async () => ({ bytes: 0, inodes: 0, complete: true }),
  nodeCpu: async () => 5e9,
  host: { rlimit: async () => ({ maxpid: 4096, curproc: 100 }), interfaces: async () => [] },
  log: silentLogger,
};

describe("resource analyzer", () => {
  function setup() {
    const clock = new FakeClock();
    const runtime = new FakeRuntime(clock);
    const pod = testPod("web", {
      volumes: [
        { name: "scratch", emptyDir: {} },
        { name: "host", hostPath: { path: "/srv" } },
      ],
    });
    const container = (name: string) =>
      runtime.seed(
        {
          name: `k8s_${name}_web_default_${pod.metadata.uid}_0`,
          image: "local/busybox:stable",
          labels: { [LABEL.podUid]: pod.metadata.uid, [LABEL.containerName]: name, [LABEL.restartCount]: "0" },
        },
        { running: true, state: "CONTAINER_RUNNING" },
      );
    container("POD");
    const app = container("app");
    runtime.containerSizes.set(app, 8192);
    let walks = 0;
    const warnings: string[] = [];
    const analyzer = createStatsAnalyzer(
      { nodeName: "node-a", fsPeriodMs: 60_000, containerStatsPeriodMs: 30_000, clock },
      {
        runtime,
        log: { ...silentLogger, warn: (message) => warnings.push(message) },
        pods: () => [pod],
        measureNode,
        emptyDirUsage: async () => (walks++, { bytes: 12_288, inodes: 3, complete: true }),
        nodeCpu: async () => 5e9,
      },
    );
    return { clock, runtime, pod, analyzer, app, warnings, walks: () => walks };
  }

  test("nothing is served before the first collection, and requests never measure", async () => {
    const s = setup();
    expect(s.analyzer.summary()).toBeUndefined();
    await s.analyzer.refresh();
    const calls = s.runtime.calls.length;
    s.analyzer.summary();
    expect(s.runtime.calls.length).toBe(calls);
  });

  test("reports node memory and filesystems, pod volumes (emptyDir only), container rootfs, logs and memory in the kubelet's Summary shape", async () => {
    const s = setup();
    const summary = (await s.analyzer.current(true))!;
    expect(summary.node).toMatchObject({
      nodeName: "node-a",
      cpu: { usageCoreNanoSeconds: 5e9 },
      memory: { availableBytes: 6e9, usageBytes: 2e9, workingSetBytes: 2e9 },
      fs: {
        capacityBytes: 100e9,
        availableBytes: 40e9,
        usedBytes: 60e9,
        inodes: 1000,
        inodesFree: 400,
        inodesUsed: 600,
      },
      runtime: { imageFs: { capacityBytes: 50e9, availableBytes: 10e9 } },
    });
    const [pod] = summary.pods;
    expect(pod!.podRef.name).toBe("web");
    expect(pod!.containers).toHaveLength(1);
    expect(pod!.containers[0]).toMatchObject({
      name: "app",
      memory: { workingSetBytes: 2 ** 19 },
      rootfs: { usedBytes: 8192, capacityBytes: 50e9 },
    });
    expect(pod!.volume).toEqual([expect.objectContaining({ name: "scratch", usedBytes: 12_288, inodesUsed: 3 })]);
    expect(pod!["ephemeral-storage"].usedBytes).toBe(8192 + 12_288);
    expect(pod!.network).toMatchObject({ rxBytes: 10, txBytes: 20 });
  });

  test("a runtime error is logged with its cause once while it lasts, and a container that went is no error", async () => {
    const s = setup();
    const failing = new Error("cannot read cgroup memory.stat: permission denied");
    s.runtime.failNext("inspectContainer", failing);
    await s.analyzer.current(true);
    expect(s.warnings).toEqual([
      expect.stringMatching(
        /^cannot read the log path of container \S+: cannot read cgroup memory.stat: permission denied; its figures are left out/,
      ),
    ]);
    s.warnings.length = 0;
    s.runtime.failNext("stats", failing);
    await s.clock.advance(60_000);
    await s.analyzer.current(true);
    s.runtime.failNext("stats", failing);
    await s.clock.advance(30_000);
    await s.analyzer.current(true);
    expect(s.warnings).toEqual([expect.stringMatching(/^cannot read the stats of container \S+: cannot read cgroup/)]);
    s.runtime.failNext("stats", new KubeletError("NotFound", "No such container"));
    await s.clock.advance(30_000);
    await s.analyzer.current(true);
    expect(s.warnings).toHaveLength(1);
  });

  test("walks filesystems once per fs period, not at every collection", async () => {
    const s = setup();
    await s.analyzer.refresh();
    await s.clock.advance(10_000);
    await s.analyzer.refresh();
    expect(s.walks()).toBe(1);
    await s.clock.advance(50_000);
    await s.analyzer.refresh();
    expect(s.walks()).toBe(2);
  });

  test("asks the runtime for a running container's log path once, not at every walk, and again for a new container", async () => {
    const s = setup();
    const dir = mkdtempSync(join(tmpdir(), "stats-log-path-"));
    const logged = (name: string) => {
      writeFileSync(join(dir, `${name}.log`), "line\n");
      return s.runtime.seed(
        {
          name: `k8s_${name}_web_default_x_0`,
          image: "local/busybox:stable",
          labels: { [LABEL.podUid]: s.pod.metadata.uid, [LABEL.containerName]: name },
        },
        { running: true, state: "CONTAINER_RUNNING", logPath: join(dir, `${name}.log`) },
      );
    };
    const inspections = (id: string) =>
      s.runtime.calls.filter((c) => c.method === "inspectContainer" && c.args[0] === id).length;
    const first = logged("first");
    for (let walk = 0; walk < 3; walk++) {
      await s.analyzer.refresh();
      await s.clock.advance(60_000);
    }
    expect(s.walks()).toBe(3);
    expect(inspections(first)).toBe(1);
    expect(s.analyzer.summary()!.pods[0]!.containers.find((c) => c.name === "first")?.logs?.usedBytes).toBeGreaterThan(
      0,
    );
    const second = logged("second");
    await s.analyzer.refresh();
    expect([inspections(first), inspections(second)]).toEqual([1, 1]);
    rmSync(dir, { recursive: true, force: true });
  });

  test("asks Docker for a container's CPU and memory once per container stats period, not at every collection", async () => {
    const s = setup();
    const statsCalls = () => s.runtime.calls.filter((c) => c.method === "stats").length;
    await s.analyzer.current(true);
    expect(statsCalls()).toBe(2); // pause and app
    await s.clock.advance(SAMPLE_MAX_AGE_MS);
    await s.analyzer.current(true);
    expect(statsCalls()).toBe(2);
    await s.clock.advance(SAMPLE_MAX_AGE_MS);
    await s.analyzer.current(true);
    expect(statsCalls()).toBe(4);
  });

  test("a container that starts between walks is measured at the next collection that reads pods", async () => {
    const s = setup();
    await s.analyzer.current(true);
    const id = s.runtime.seed(
      {
        name: "k8s_late_web_default_x_0",
        image: "local/busybox:stable",
        labels: { [LABEL.podUid]: s.analyzer.summary()!.pods[0]!.podRef.uid, [LABEL.containerName]: "late" },
      },
      { running: true, state: "CONTAINER_RUNNING" },
    );
    s.runtime.containerSizes.set(id, 1234);
    await s.clock.advance(SAMPLE_MAX_AGE_MS);
    await s.analyzer.current(true);
    expect(s.walks()).toBe(2);
    expect(s.analyzer.summary()!.pods[0]!.containers.find((c) => c.name === "late")?.rootfs?.usedBytes).toBe(1234);
  });

  test("with pod cgroups, a pod missing from one collection's read (right after a restart) keeps the last one's CPU and memory", async () => {
    const clock = new FakeClock();
    const pod = testPod("web");
    let shown = true;
    const analyzer = createStatsAnalyzer(
      { nodeName: "node-a", fsPeriodMs: 60_000, containerStatsPeriodMs: 30_000, clock },
      {
        ...quietNode,
        runtime: new FakeRuntime(clock),
        pods: () => [pod],
        sampler: () => ({
          sample: async () => ({
            time: clock.now(),
            pods: shown
              ? [
                  {
                    uid: pod.metadata.uid,
                    name: "web",
                    namespace: "default",
                    cgroup: "/kubepods/pod",
                    stats: cgroupStats(),
                    interfaces: [],
                    containers: [],
                  },
                ]
              : [],
          }),
        }),
      },
    );
    await analyzer.current(true);
    const before = analyzer.summary()!.pods[0]!;
    shown = false;
    await clock.advance(SAMPLE_MAX_AGE_MS);
    await analyzer.current(true);
    const after = analyzer.summary()!.pods[0]!;
    expect(after.memory).toEqual(before.memory!);
    expect(after.memory!.workingSetBytes).toBe(9000);
    expect(after.cpu).toEqual(before.cpu!);
  });

  test("the sampler's listing keys each pod by its resources, declared and reported: a resize applied changes the key, a new phase does not", async () => {
    const clock = new FakeClock();
    let pod = testPod("web", {
      containers: [{ name: "app", image: "busybox", resources: { limits: { memory: "32Mi" } } }],
    });
    const keys: Array<string | undefined> = [];
    const analyzer = createStatsAnalyzer(
      { nodeName: "node-a", fsPeriodMs: 60_000, containerStatsPeriodMs: 30_000, clock },
      {
        ...quietNode,
        runtime: new FakeRuntime(clock),
        pods: () => [pod],
        sampler: (listing) => ({
          sample: async () => {
            keys.push(listing().podResources?.get(pod.metadata.uid));
            return { time: clock.now(), pods: [] };
          },
        }),
      },
    );
    const read = async () => {
      await clock.advance(SAMPLE_MAX_AGE_MS);
      await analyzer.sample("all");
      return keys.at(-1);
    };
    const declared = await read();
    expect(declared).toBeString();
    pod = { ...pod, status: { ...pod.status, phase: "Running" } };
    expect(await read()).toBe(declared);
    const running = {
      name: "app",
      ready: true,
      restartCount: 0,
      image: "busybox",
      imageID: "",
      containerID: "docker://a",
    };
    pod = {
      ...pod,
      status: { ...pod.status, containerStatuses: [{ ...running, resources: { limits: { memory: "32Mi" } } }] },
    };
    const reported = await read();
    expect(reported).not.toBe(declared);
    // The resize: declared first, then reported once the runtime applied it.
    pod = {
      ...pod,
      spec: { ...pod.spec, containers: [{ ...pod.spec.containers[0]!, resources: { limits: { memory: "64Mi" } } }] },
    };
    const edited = await read();
    expect(edited).not.toBe(reported);
    pod = {
      ...pod,
      status: { ...pod.status, containerStatuses: [{ ...running, resources: { limits: { memory: "64Mi" } } }] },
    };
    expect(await read()).not.toBe(edited);
  });

  describe("scrapes are served the last cgroup read", () => {
    /** An analyzer whose sampler records the detail of each read it is asked for. */
    const counted = () => {
      const clock = new FakeClock();
      const reads: string[] = [];
      const networks: boolean[] = [];
      let fail = false;
      const runtime = new FakeRuntime(clock);
      const analyzer = createStatsAnalyzer(
        { nodeName: "node-a", fsPeriodMs: 60_000, containerStatsPeriodMs: 30_000, clock },
        {
          ...quietNode,
          runtime,
          pods: () => [],
          sampler: () => ({
            sample: async (detail, network) => {
              reads.push(detail ?? "all");
              networks.push(network ?? true);
              if (fail) throw new Error("EMFILE");
              return { time: clock.now(), pods: [] };
            },
          }),
        },
      );
      return { clock, reads, networks, runtime, analyzer, failing: (on: boolean) => void (fail = on) };
    };

    test("a scrape within 15 s of the collection is served the collection's read when it asks no more detail", async () => {
      const { clock, reads, analyzer } = counted();
      const collectedAt = clock.now();
      await analyzer.current(false);
      await clock.advance(SAMPLE_MAX_AGE_MS - 1);
      const served = await analyzer.sample("usage");
      expect(reads).toEqual(["summary"]);
      expect(served?.time).toBe(collectedAt);
      // 15 s on, a collection reads pods again for the scrape, at least what the Summary shows.
      await clock.advance(1);
      expect((await analyzer.sample("usage"))?.time).toBe(clock.now());
      expect(reads).toEqual(["summary", "summary"]);
    });

    test("a scrape asking more detail reads afresh, and the next one within 15 s is served that read", async () => {
      const { clock, reads, analyzer } = counted();
      await analyzer.current(false);
      await analyzer.sample("all");
      await clock.advance(5000);
      await analyzer.sample("all");
      await analyzer.sample("usage");
      expect(reads).toEqual(["summary", "all"]);
    });

    test("scraped every 15 s, pods are read once per scrape interval, by the first endpoint, never by the 10 s collection", async () => {
      const { clock, reads, networks, analyzer } = counted();
      // Collections every 10 s; /metrics/cadvisor, then 5 s later /metrics/resource (its Summary, then its read).
      for (let t = 0; t < 120_000; t += 5000) {
        if (t % 10_000 === 0) await analyzer.refresh();
        if (t % 15_000 === 0) await analyzer.sample("all");
        if (t % 15_000 === 5000) await Promise.all([analyzer.current(false), analyzer.sample("usage")]);
        await clock.advance(5000);
      }
      expect(reads).toEqual(Array(8).fill("all"));
      expect(networks).toEqual(Array(8).fill(true));
      // Scrapes stop: the collection reads no pod (eviction reads them when it ranks).
      reads.length = 0;
      for (let t = 0; t < 60_000; t += 10_000) {
        await analyzer.refresh();
        await clock.advance(10_000);
      }
      expect(reads).toEqual([]);
    });

    test("with nothing reading pods, a collection reads no cgroup and asks the runtime nothing between walks", async () => {
      const { clock, reads, analyzer, runtime } = counted();
      for (let t = 0; t < 120_000; t += 10_000) {
        await analyzer.refresh();
        await clock.advance(10_000);
      }
      expect(reads).toEqual([]);
      // The walk (local storage eviction's figures) keeps its 1 min period: its listing with sizes is all it asks.
      expect(runtime.calls.map((c) => c.method)).toEqual(["listContainers", "listContainers"]);
    });

    test("a collection for a reader takes the runtime's last listing while current for stats, and lists when older", async () => {
      const { clock, analyzer, runtime } = counted();
      const shared = createSharedListing(clock);
      const token = shared.begin();
      shared.recordContainers(token, () => []);
      shared.recordSandboxes(token, () => []);
      Object.assign(runtime, { lastListing: (maxAgeMs: number) => shared.current(maxAgeMs) });
      // The walk's listing with sizes is its own (sizes are not in a listing): only the others are counted.
      const lists = () =>
        runtime.calls
          .filter((c) => c.method.startsWith("list") && !(c.args[0] as { size?: boolean } | undefined)?.size)
          .map((c) => c.method);
      await clock.advance(STATS_LISTING_MAX_AGE_MS);
      await analyzer.current(false);
      expect(lists()).toEqual([]);
      await clock.advance(SAMPLE_MAX_AGE_MS);
      await analyzer.current(false);
      expect(lists()).toEqual(["listContainers", "listPodSandboxes"]);
    });

    test("an endpoint after a quiet spell is served a collection made for it, and the 10 s collections read no pod after it", async () => {
      const { clock, reads, analyzer, networks } = counted();
      await analyzer.refresh();
      await clock.advance(40_000);
      const served = await analyzer.current(true);
      expect(served!.node.memory.time).toBe(new Date(clock.now()).toISOString());
      expect([reads, networks]).toEqual([["summary"], [true]]);
      // Within 15 s it is served the same collection.
      await clock.advance(SAMPLE_MAX_AGE_MS - 1);
      expect(await analyzer.current(true)).toBe(served);
      for (let t = 0; t < 6; t++) {
        await clock.advance(10_000);
        await analyzer.refresh();
      }
      expect(reads).toEqual(["summary"]);
    });

    test("/stats/summary after eviction's ranking within 15 s reads pods again, with their networks", async () => {
      const { clock, reads, analyzer, networks } = counted();
      await analyzer.current(false);
      await clock.advance(1000);
      await analyzer.current(true);
      await analyzer.current(true);
      expect([reads, networks]).toEqual([
        ["summary", "summary"],
        [false, true],
      ]);
    });

    test("eviction's ranking reads pods for itself alone, without their networks and without keeping the collection reading", async () => {
      const { clock, reads, analyzer, networks } = counted();
      await analyzer.current(false);
      expect([reads, networks]).toEqual([["summary"], [false]]);
      await clock.advance(10_000);
      await analyzer.refresh();
      expect(reads).toEqual(["summary"]);
    });

    test("/metrics/resource reads no network; /metrics/cadvisor reads them", async () => {
      const { clock, analyzer, networks } = counted();
      await analyzer.sample("usage");
      await clock.advance(SAMPLE_MAX_AGE_MS);
      await analyzer.sample("all");
      expect(networks).toEqual([false, true]);
    });

    test("concurrent scrapes share one read", async () => {
      const { reads, analyzer } = counted();
      await Promise.all([analyzer.sample("all"), analyzer.sample("all"), analyzer.sample("limits")]);
      expect(reads).toEqual(["all"]);
    });

    test("a read that failed is not served again: the next scrape reads afresh", async () => {
      const { reads, analyzer, failing } = counted();
      failing(true);
      await expect(analyzer.sample("all")).rejects.toThrow("EMFILE");
      failing(false);
      await analyzer.sample("all");
      expect(reads).toEqual(["all", "all"]);
    });
  });

  test("with pod cgroups: CPU and memory from the cgroup files, usageNanoCores from two collections, no stats call", async () => {
    const clock = new FakeClock();
    const runtime = new FakeRuntime(clock);
    const pod = testPod("web");
    const labels = (restart: string) => ({
      [LABEL.podUid]: pod.metadata.uid,
      [LABEL.containerName]: "app",
      [LABEL.restartCount]: restart,
    });
    const dead = runtime.seed(
      { name: "k8s_app_0", image: "busybox", labels: labels("0") },
      { state: "CONTAINER_EXITED" },
    );
    let cpu = 1e9;
    const analyzer = createStatsAnalyzer(
      { nodeName: "node-a", fsPeriodMs: 60_000, containerStatsPeriodMs: 30_000, clock },
      {
        runtime,
        pods: () => [pod],
        measureNode,
        emptyDirUsage: async () => ({ bytes: 0, inodes: 0, complete: true }),
        nodeCpu: async () => 5e9,
        host: { rlimit: async () => ({ maxpid: 4096, curproc: 100 }), interfaces: async () => [] },
        log: silentLogger,
        sampler: (listing) => ({
          sample: async () => ({
            time: clock.now(),
            root: cgroupStats({ memoryRssBytes: 5e8, pageFaults: 1234 }),
            pods: [
              {
                uid: pod.metadata.uid,
                name: "web",
                namespace: "default",
                cgroup: "/kubepods/pod",
                stats: cgroupStats({ cpuUsageNanoseconds: cpu, pids: 3 }),
                interfaces: [],
                containers: listing()
                  .containers.filter((c) => c.state === "CONTAINER_RUNNING")
                  .map((c) => ({
                    id: c.id,
                    name: "app",
                    runtimeName: c.name,
                    image: c.image,
                    createdAt: c.createdAt,
                    sandbox: false,
                    cgroup: `/kubepods/pod/${c.id}`,
                    stats: cgroupStats({ cpuUsageNanoseconds: cpu, memoryLimitBytes: 10_000 }),
                  })),
              },
            ],
          }),
        }),
      },
    );
    // Crash-looping: only the dead instance exists; it is listed, without CPU or memory.
    await analyzer.current(true);
    expect(analyzer.summary()!.pods[0]!.containers.map((c) => [c.name, c.cpu])).toEqual([["app", undefined]]);
    await runtime.removeContainer(dead);
    runtime.seed(
      { name: "k8s_app_1", image: "busybox", labels: labels("1") },
      { running: true, state: "CONTAINER_RUNNING" },
    );
    await clock.advance(SAMPLE_MAX_AGE_MS);
    await analyzer.current(true);
    await clock.advance(SAMPLE_MAX_AGE_MS);
    cpu = 4e9;
    await analyzer.current(true);
    const summary = analyzer.summary()!;
    const [container] = summary.pods[0]!.containers;
    expect(container!.cpu).toMatchObject({ usageCoreNanoSeconds: 4e9, usageNanoCores: 2e8 });
    expect(container!.memory).toMatchObject({
      availableBytes: 1000,
      workingSetBytes: 9000,
      rssBytes: 4000,
      pageFaults: 77,
      majorPageFaults: 3,
    });
    expect(summary.pods[0]!.cpu!.usageNanoCores).toBe(2e8);
    expect(summary.pods[0]!.process_stats).toEqual({ process_count: 3 });
    expect(summary.node.rlimit).toMatchObject({ maxpid: 4096, curproc: 100 });
    expect(summary.node.memory).toMatchObject({ rssBytes: 5e8, pageFaults: 1234, majorPageFaults: 3 });
    expect(runtime.calls.filter((c) => c.method === "stats")).toEqual([]);
  });

  describe("a container's logs count the rotated files its runtime writes", () => {
    const dir = mkdtempSync(join(tmpdir(), "stats-logs-"));
    afterAll(() => rmSync(dir, { recursive: true, force: true }));
    const write = (name: string, bytes: number) => writeFileSync(join(dir, name), Buffer.alloc(bytes, 1));
    const onDisk = (names: string[]) => names.reduce((n, name) => n + statSync(join(dir, name)).blocks * 512, 0);

    async function logsUsed(logPath: string): Promise<number | undefined> {
      const s = setup();
      s.runtime.seed(
        {
          name: "k8s_logged_web_default_x_0",
          image: "local/busybox:stable",
          labels: { [LABEL.podUid]: s.pod.metadata.uid, [LABEL.containerName]: "logged" },
        },
        { running: true, state: "CONTAINER_RUNNING", logPath },
      );
      await s.analyzer.refresh();
      return s.analyzer.summary()!.pods[0]!.containers.find((c) => c.name === "logged")?.logs?.usedBytes;
    }

    test("CRI rotation (the container log manager): <log>.<timestamp> and <log>.<timestamp>.gz", async () => {
      const files = ["0.log", "0.log.20261128-161500.gz", "0.log.20261128-161600.gz", "0.log.20261128-161700"];
      files.forEach((name, i) => write(name, 5000 * (i + 1)));
      write("1.log", 70_000); // the next instance's log: not this container's
      const used = await logsUsed(join(dir, "0.log"));
      expect(used).toBe(onDisk(files));
      expect(used).toBeGreaterThan(onDisk(["0.log"]));
    });

    test("Docker's json-file rotation: <log>.1, <log>.2 and, compressed, <log>.3.gz", async () => {
      const files = ["id-json.log", "id-json.log.1", "id-json.log.2", "id-json.log.3.gz"];
      files.forEach((name, i) => write(name, 7000 * (i + 1)));
      write("id-json.logs", 90_000); // another file that only starts like it
      expect(await logsUsed(join(dir, "id-json.log"))).toBe(onDisk(files));
    });
  });
});
