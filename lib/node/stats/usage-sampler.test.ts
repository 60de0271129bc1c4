import { describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ContainerSummary, PodSandboxSummary } from "../../container/runtime.ts";
import { LABEL } from "../../container/runtime.ts";
import { cgroupStats } from "../../testing/usage-samples.ts";
import type { CgroupReader } from "./cgroup-stats.ts";
import { createUsageSampler, LIMITS_MAX_AGE_MS, parseNetDev, type RuntimeListing } from "./usage-sampler.ts";

const NET_DEV = `Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo:     500       5    0    0    0     0          0         0      500       5    0    0    0     0       0          0
  eth0:    1000      10    1    2    0     0          0         0     2000      20    3    4    0     0       0          0
vethab12:    7       1    0    0    0     0          0         0        7       1    0    0    0     0       0          0
`;

/** Pod "web" (uid u1): its app container and its sandbox, as the runtime lists them. */
const app = {
  id: "app-id",
  name: "k8s_app_web_default_u1_0",
  podSandboxId: "pause-id",
  labels: { [LABEL.podName]: "web", [LABEL.podNamespace]: "default", [LABEL.containerName]: "app" },
  image: "local/busybox:stable",
  imageId: "",
  state: "CONTAINER_RUNNING",
  createdAt: 1,
} satisfies ContainerSummary;
const pause = {
  id: "pause-id",
  metadata: { name: "web", namespace: "default", uid: "u1", attempt: 0 },
  state: "ready",
  createdAt: 2,
  labels: {},
} satisfies PodSandboxSummary;

/** The pod cgroups of u1 and u2. */
const twoPods = new Map([
  ["u1", "/kubepods/podu1"],
  ["u2", "/kubepods/podu2"],
]);

describe("usage sampler", () => {
  test("/proc/<pid>/net/dev: every counter of each interface, lo and veth left out as cAdvisor does", () => {
    expect(parseNetDev(NET_DEV)).toEqual([
      {
        name: "eth0",
        rxBytes: 1000,
        rxPackets: 10,
        rxErrors: 1,
        rxDropped: 2,
        txBytes: 2000,
        txPackets: 20,
        txErrors: 3,
        txDropped: 4,
      },
    ]);
  });

  test("names each container cgroup by the runtime's listing: the sandbox as POD, cgroups of unknown containers and of unknown pods left out", async () => {
    const reader: CgroupReader = {
      version: 1,
      read: async (path) => (path.includes("gone") ? undefined : cgroupStats()),
      containers: async (pod) =>
        pod === "/kubepods/podu1"
          ? ["app-id", "pause-id", "stranger-id"].map((id) => ({ id, path: `${pod}/${id}` }))
          : [{ id: "x", path: `${pod}/x` }],
      firstPid: async () => undefined,
      sweep: () => {},
    };
    const sampler = createUsageSampler({
      reader,
      podCgroups: async () => twoPods,
      listing: () => ({ containers: [app], sandboxes: [pause] }),
      now: () => 42,
    });
    const sample = await sampler.sample();
    expect(sample.time).toBe(42);
    expect(sample.pods.map((p) => [p.uid, p.name, p.namespace])).toEqual([["u1", "web", "default"]]);
    expect(sample.pods[0]!.containers.map((c) => [c.name, c.runtimeName, c.sandbox, c.cgroup])).toEqual([
      ["app", "k8s_app_web_default_u1_0", false, "/kubepods/podu1/app-id"],
      ["POD", "pause-id", true, "/kubepods/podu1/pause-id"],
    ]);
  });

  test("reads a pod's container cgroups again only when the runtime lists a container of the pod added, gone or in another state", async () => {
    const listed: string[] = [];
    const reader: CgroupReader = {
      version: 1,
      read: async () => cgroupStats(),
      containers: async (pod) => {
        listed.push(pod);
        return ["app-id", "pause-id", "late-id"].map((id) => ({ id, path: `${pod}/${id}` }));
      },
      firstPid: async () => undefined,
      sweep: () => {},
    };
    const inPod = { ...app, labels: { ...app.labels, [LABEL.podUid]: "u1" } };
    let listing: { containers: ContainerSummary[]; sandboxes: PodSandboxSummary[] } = {
      containers: [inPod],
      sandboxes: [pause],
    };
    const sampler = createUsageSampler({
      reader,
      podCgroups: async () => new Map([["u1", "/kubepods/podu1"]]),
      listing: () => listing,
      now: () => 42,
    });
    const names = async () => (await sampler.sample("all")).pods[0]!.containers.map((c) => c.name).sort();
    expect(await names()).toEqual(["POD", "app"]);
    expect(await names()).toEqual(["POD", "app"]);
    expect(listed).toHaveLength(1);
    const late: ContainerSummary = {
      ...inPod,
      id: "late-id",
      name: "k8s_late_web_default_u1_0",
      state: "CONTAINER_CREATED",
      labels: { ...inPod.labels, [LABEL.containerName]: "late" },
    };
    listing = { containers: [inPod, late], sandboxes: [pause] };
    expect(await names()).toEqual(["POD", "app", "late"]);
    listing = { containers: [inPod, { ...late, state: "CONTAINER_RUNNING" }], sandboxes: [pause] };
    await names();
    listing = { containers: [inPod], sandboxes: [pause] };
    expect(await names()).toEqual(["POD", "app"]);
    expect(listed).toHaveLength(4);
  });

  test("the summary's read leaves the sandbox's cgroup unread (it names the pod and holds its network) and containers' process counts out", async () => {
    const reads: string[] = [];
    const reader: CgroupReader = {
      version: 1,
      read: async (path, detail) => {
        reads.push(`${path} ${detail}`);
        return cgroupStats();
      },
      containers: async (pod) => ["app-id", "pause-id"].map((id) => ({ id, path: `${pod}/${id}` })),
      firstPid: async (path) => (path.endsWith("pause-id") ? 7 : undefined),
      sweep: () => {},
    };
    const procRoot = mkdtempSync(join(tmpdir(), "kubelet-usage-sampler-"));
    mkdirSync(join(procRoot, "7/net"), { recursive: true });
    writeFileSync(join(procRoot, "7/net/dev"), NET_DEV);
    const sampler = createUsageSampler({
      reader,
      podCgroups: async () => new Map([["u1", "/kubepods/podu1"]]),
      listing: () => ({ containers: [app], sandboxes: [pause] }),
      now: () => 42,
      procRoot,
    });
    const sample = await sampler.sample("summary");
    rmSync(procRoot, { recursive: true });
    expect(reads.sort()).toEqual(["/ summary", "/kubepods/podu1 summary", "/kubepods/podu1/app-id limits"]);
    expect(sample.pods.map((p) => [p.name, p.namespace, p.interfaces.map((i) => i.name)])).toEqual([
      ["web", "default", ["eth0"]],
    ]);
    expect(sample.pods[0]!.containers.map((c) => c.name)).toEqual(["app"]);
  });

  test("a pod's limits are read under a key that changes when its containers' states, its resources or the limits' period change", async () => {
    const keys = new Map<string, string | undefined>();
    const reader: CgroupReader = {
      version: 1,
      read: async (path, _detail, limitsKey) => {
        keys.set(path, limitsKey);
        return cgroupStats();
      },
      containers: async (pod) => ["app-id", "pause-id"].map((id) => ({ id, path: `${pod}/${id}` })),
      firstPid: async () => undefined,
      sweep: () => {},
    };
    const own = { ...app, labels: { ...app.labels, [LABEL.podUid]: "u1" } };
    let listing: RuntimeListing = { containers: [own], sandboxes: [pause], podResources: new Map([["u1", "64Mi"]]) };
    let now = 1_000;
    const sampler = createUsageSampler({
      reader,
      podCgroups: async () => new Map([["u1", "/kubepods/podu1"]]),
      listing: () => listing,
      now: () => now,
    });
    const read = async () => {
      await sampler.sample();
      const [pod, container] = [keys.get("/kubepods/podu1"), keys.get("/kubepods/podu1/app-id")];
      // The pod's cgroup and its containers' share one key; the root cgroup is read whole.
      expect(container).toBe(pod);
      expect(keys.get("/")).toBeUndefined();
      return pod;
    };
    const first = await read();
    now += LIMITS_MAX_AGE_MS / 2;
    expect(await read()).toBe(first);
    listing = { ...listing, podResources: new Map([["u1", "128Mi"]]) };
    const resized = await read();
    expect(resized).not.toBe(first);
    listing = { ...listing, containers: [{ ...own, state: "CONTAINER_EXITED" }] };
    const exited = await read();
    expect(exited).not.toBe(resized);
    now += LIMITS_MAX_AGE_MS;
    expect(await read()).not.toBe(exited);
  });

  test("a running container whose cgroup its pod's last read did not find has the pod's directory read again until it is", async () => {
    const listed: string[] = [];
    const present = ["pause-id"];
    const reader: CgroupReader = {
      version: 1,
      read: async () => cgroupStats(),
      containers: async (pod) => {
        listed.push(pod);
        return present.map((id) => ({ id, path: `${pod}/${id}` }));
      },
      firstPid: async () => undefined,
      sweep: () => {},
    };
    const inPod = { ...app, labels: { ...app.labels, [LABEL.podUid]: "u1" } };
    const sampler = createUsageSampler({
      reader,
      podCgroups: async () => new Map([["u1", "/kubepods/podu1"]]),
      listing: () => ({ containers: [inPod], sandboxes: [pause] }),
      now: () => 42,
    });
    const names = async () => (await sampler.sample("all")).pods[0]!.containers.map((c) => c.name).sort();
    // The runtime lists app running, but its cgroup is not made yet: the same listing, read again at each sample.
    expect(await names()).toEqual(["POD"]);
    expect(await names()).toEqual(["POD"]);
    present.push("app-id");
    expect(await names()).toEqual(["POD", "app"]);
    expect(listed).toHaveLength(3);
    await names();
    await names();
    expect(listed).toHaveLength(3);
  });

  describe("pods' networks", () => {
    /** Pods u1 and u2, each with a sandbox whose first process is 7 and 8; /proc holds what `setup` writes. */
    const sampled = async (network: boolean, setup: (proc: string) => void) => {
      const pauses = [pause, { ...pause, id: "pause-2", metadata: { ...pause.metadata, name: "db", uid: "u2" } }];
      const pids: number[] = [];
      const reader: CgroupReader = {
        version: 1,
        read: async () => cgroupStats(),
        containers: async (pod) =>
          [pod.endsWith("u1") ? "pause-id" : "pause-2"].map((id) => ({ id, path: `${pod}/${id}` })),
        firstPid: async (path) => {
          const pid = path.endsWith("pause-id") ? 7 : 8;
          pids.push(pid);
          return pid;
        },
        sweep: () => {},
      };
      const procRoot = mkdtempSync(join(tmpdir(), "kubelet-usage-sampler-"));
      setup(procRoot);
      const sampler = createUsageSampler({
        reader,
        podCgroups: async () => twoPods,
        listing: () => ({ containers: [], sandboxes: pauses }),
        now: () => 42,
        procRoot,
      });
      const sample = await sampler.sample("all", network);
      rmSync(procRoot, { recursive: true });
      return { interfaces: sample.pods.map((p) => [p.name, p.interfaces.map((i) => i.name)]), pids };
    };
    const netDev = (proc: string, pid: number, namespace: string) => {
      mkdirSync(join(proc, `${pid}/net`), { recursive: true });
      mkdirSync(join(proc, `${pid}/ns`), { recursive: true });
      writeFileSync(join(proc, `${pid}/net/dev`), NET_DEV);
      symlinkSync(namespace, join(proc, `${pid}/ns/net`));
    };

    test("without network asked (eviction's ranking, /metrics/resource), no pod's /proc/<pid>/net/dev is read", async () => {
      const read = await sampled(false, (proc) => (netDev(proc, 7, "net:[1]"), netDev(proc, 8, "net:[2]")));
      expect(read).toEqual({
        interfaces: [
          ["web", []],
          ["db", []],
        ],
        pids: [],
      });
      const asked = await sampled(true, (proc) => (netDev(proc, 7, "net:[1]"), netDev(proc, 8, "net:[2]")));
      expect(asked.interfaces).toEqual([
        ["web", ["eth0"]],
        ["db", ["eth0"]],
      ]);
    });

    test("a sandbox's process and namespace are looked up again only when its pod's listing changes or its process went; its counters are read every sample", async () => {
      const procRoot = mkdtempSync(join(tmpdir(), "kubelet-usage-sampler-"));
      netDev(procRoot, 7, "net:[1]");
      let pid = 7;
      const looked: number[] = [];
      const reader: CgroupReader = {
        version: 1,
        read: async () => cgroupStats(),
        containers: async (pod) => [{ id: "pause-id", path: `${pod}/pause-id` }],
        firstPid: async () => (looked.push(pid), pid),
        sweep: () => {},
      };
      let containers: ContainerSummary[] = [];
      const sampler = createUsageSampler({
        reader,
        podCgroups: async () => new Map([["u1", "/kubepods/podu1"]]),
        listing: () => ({ containers, sandboxes: [pause] }),
        now: () => 42,
        procRoot,
      });
      const received = async () => (await sampler.sample("all", true)).pods[0]?.interfaces[0]?.rxBytes;
      expect(await received()).toBe(1000);
      writeFileSync(join(procRoot, "7/net/dev"), NET_DEV.replace("1000", "1500"));
      expect(await received()).toBe(1500);
      // A sample without networks (eviction's ranking) forgets nothing.
      await sampler.sample("summary", false);
      expect(await received()).toBe(1500);
      expect(looked).toEqual([7]);
      // The pod's listing changed: looked up again; its process's counters unreadable (gone), looked up again next time.
      containers = [{ ...app, labels: { ...app.labels, [LABEL.podUid]: "u1" } }];
      pid = 9;
      expect(await received()).toBeUndefined();
      netDev(procRoot, 9, "net:[2]");
      expect(await received()).toBe(1000);
      expect(await received()).toBe(1000);
      expect(looked).toEqual([7, 9, 9]);
      rmSync(procRoot, { recursive: true });
    });

    test("pods in one network namespace (hostNetwork: the node's) have its counters read once per sample", async () => {
      // Process 8's net/dev is unreadable: db is shown web's counters only if its namespace's read is shared.
      const read = await sampled(true, (proc) => {
        netDev(proc, 7, "net:[4026531840]");
        mkdirSync(join(proc, "8/ns"), { recursive: true });
        symlinkSync("net:[4026531840]", join(proc, "8/ns/net"));
      });
      expect(read.interfaces).toEqual([
        ["web", ["eth0"]],
        ["db", ["eth0"]],
      ]);
    });
  });
});
