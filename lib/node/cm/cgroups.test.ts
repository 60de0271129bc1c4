import { describe, expect, test } from "bun:test";
import { testPod } from "../../testing/pods.ts";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { silentLogger } from "../../log.ts";
import {
  cgroupFiles,
  cgroupPath,
  createCgroupManager,
  nodeAllocatable,
  podCgroupName,
  podResourceConfig,
  runtimeCgroupParent,
} from "./cgroups.ts";

describe("cgroup names", () => {
  test("cgroupfs paths nest kubepods/<qos>/pod<uid> under the cgroup root", () => {
    expect(cgroupPath("/", podCgroupName("Burstable", "ab-12"), "cgroupfs")).toBe("/kubepods/burstable/podab-12");
    expect(cgroupPath("/custom", podCgroupName("Guaranteed", "ab-12"), "cgroupfs")).toBe("/custom/kubepods/podab-12");
  });

  test("systemd names are nested slices with dashes escaped, and Docker gets the leaf slice", () => {
    const name = podCgroupName("BestEffort", "ab-12");
    expect(cgroupPath("/", name, "systemd")).toBe(
      "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-podab_12.slice",
    );
    expect(runtimeCgroupParent("/", name, "systemd")).toBe("kubepods-besteffort-podab_12.slice");
  });
});

describe("cgroup files", () => {
  test("v1 writes shares, CFS quota and period, memory and pids in their controllers", () => {
    expect(
      cgroupFiles(1, { cpuShares: 256, cpuQuota: 25_000, cpuPeriod: 100_000, memoryLimit: 1024, pidsLimit: 10 }),
    ).toEqual([
      ["cpu", "cpu.shares", "256"],
      ["cpu", "cpu.cfs_period_us", "100000"],
      ["cpu", "cpu.cfs_quota_us", "25000"],
      ["memory", "memory.limit_in_bytes", "1024"],
      ["pids", "pids.max", "10"],
    ]);
  });

  test("v2 converts shares to cpu.weight and writes cpu.max, memory.max and pids.max", () => {
    expect(cgroupFiles(2, { cpuShares: 1024, cpuQuota: 50_000, cpuPeriod: 100_000 })).toEqual([
      ["", "cpu.weight", "39"],
      ["", "cpu.max", "50000 100000"],
      ["", "memory.max", "max"],
      ["", "pids.max", "max"],
    ]);
  });
});

describe("pod limits and node allocatable", () => {
  const options = { cfsQuota: true, cfsPeriodUs: 100_000, pidsLimit: 100 };
  test("a pod's limits are the sum of its containers' only when every container has one", () => {
    const pod = testPod("p", {
      containers: [
        { name: "a", image: "x", resources: { limits: { cpu: "250m", memory: "64Mi" } } },
        { name: "b", image: "x", resources: { limits: { cpu: "250m", memory: "64Mi" } } },
      ],
    });
    expect(podResourceConfig(pod, options)).toEqual({
      cpuShares: 512,
      cpuQuota: 50_000,
      cpuPeriod: 100_000,
      memoryLimit: 128 * 2 ** 20,
      pidsLimit: 100,
    });
    pod.spec.containers[1]!.resources = { requests: { cpu: "100m" } };
    expect(podResourceConfig(pod, options)).toEqual({ cpuShares: 358, pidsLimit: 100 });
    expect(podResourceConfig(pod, { ...options, cfsQuota: false }).cpuQuota).toBeUndefined();
  });

  test("allocatable is capacity minus both reservations and the hard eviction threshold", () => {
    expect(
      nodeAllocatable(
        { milliCpu: 4000, memoryBytes: 8 * 2 ** 30 },
        {
          kube: { cpu: "500m", memory: "1Gi" },
          system: { cpu: "0.5", memory: "512Mi" },
          evictionHard: { "memory.available": "10%" },
        },
      ),
    ).toEqual({ milliCpu: 3000, memoryBytes: Math.round(8 * 2 ** 30 - 2 ** 30 - 512 * 2 ** 20 - 0.1 * 8 * 2 ** 30) });
  });
});

/** A cgroupfs manager over a temporary cgroup tree. */
const managerOn = (mountPoint: string) =>
  createCgroupManager({
    driver: "cgroupfs",
    root: "/",
    cfsQuota: true,
    cfsPeriodUs: 100_000,
    pidsLimit: -1,
    mountPoint,
    log: silentLogger,
  });

describe("pod usage", () => {
  test("pods the manager did not create (adopted after a restart) are found by their cgroup, every pod asked at once", async () => {
    const mountPoint = mkdtempSync(join(tmpdir(), "kubelet-cgroups-"));
    try {
      writeFileSync(join(mountPoint, "cgroup.controllers"), "cpu memory pids");
      const pods = ["kubepods/poda1", "kubepods/burstable/podb2", "kubepods/besteffort/podc3"];
      pods.forEach((path, i) => {
        mkdirSync(join(mountPoint, path), { recursive: true });
        writeFileSync(join(mountPoint, path, "memory.current"), `${(i + 1) * 1000}\n`);
        writeFileSync(join(mountPoint, path, "memory.stat"), "anon 5\ninactive_file 100\n");
        writeFileSync(join(mountPoint, path, "cpu.stat"), `usage_usec ${i + 7}\nuser_usec 1\n`);
      });
      const manager = managerOn(mountPoint);
      const found = await Promise.all([manager.podCgroups(), manager.podCgroups()]);
      const usage = await Promise.all(
        ["a1", "b2", "c3", "absent"].map(async (uid) => {
          const path = found[0].get(uid);
          return path ? manager.reader.read(path) : undefined;
        }),
      );
      expect(found[1]).toBe(found[0]);
      expect(usage.map((u) => u && [u.cpuUsageNanoseconds, u.memoryUsageBytes, u.memoryWorkingSetBytes])).toEqual([
        [7000, 1000, 900],
        [8000, 2000, 1900],
        [9000, 3000, 2900],
        undefined,
      ]);
    } finally {
      rmSync(mountPoint, { recursive: true, force: true });
    }
  });
});

describe("pod resize", () => {
  test("a growing pod's cgroup grows before its containers; a shrinking one keeps its limits until the final step", async () => {
    const mountPoint = mkdtempSync(join(tmpdir(), "kubelet-cgroups-"));
    try {
      writeFileSync(join(mountPoint, "cgroup.controllers"), "cpu memory pids");
      const manager = managerOn(mountPoint);
      const sized = (cpu: string, memory: string) =>
        testPod("p", { containers: [{ name: "app", image: "x", resources: { limits: { cpu, memory } } }] });
      const files = () =>
        ["cpu.max", "memory.max"].map((f) =>
          readFileSync(join(mountPoint, "kubepods", `pod${sized("1", "1").metadata.uid}`, f), "utf8"),
        );
      await manager.ensurePod(sized("200m", "32Mi"));
      await manager.resizePod(sized("500m", "16Mi"), "grow");
      expect(files()).toEqual(["50000 100000", String(32 * 2 ** 20)]);
      await manager.resizePod(sized("500m", "16Mi"), "final");
      expect(files()).toEqual(["50000 100000", String(16 * 2 ** 20)]);
    } finally {
      rmSync(mountPoint, { recursive: true, force: true });
    }
  });
});

describe("orphaned pod cgroups", () => {
  test("a pod's orphaned cgroup is said to be removed once, though two housekeeping passes find it at once", async () => {
    const mountPoint = mkdtempSync(join(tmpdir(), "kubelet-cgroups-"));
    try {
      writeFileSync(join(mountPoint, "cgroup.controllers"), "cpu memory pids");
      mkdirSync(join(mountPoint, "kubepods/besteffort/podgone"), { recursive: true });
      mkdirSync(join(mountPoint, "kubepods/besteffort/podkept"), { recursive: true });
      const said: string[] = [];
      const log = { ...silentLogger, info: (line: string) => void said.push(line) };
      const manager = createCgroupManager({
        driver: "cgroupfs",
        root: "/",
        cfsQuota: false,
        cfsPeriodUs: 0,
        pidsLimit: -1,
        mountPoint,
        log,
      });
      const kept = new Set(["kept"]);
      const passes = await Promise.all([manager.removeOrphans(kept), manager.removeOrphans(kept)]);
      expect(passes.flat()).toEqual(["gone"]);
      expect(said).toEqual(["removed the cgroup of orphaned pod gone (/kubepods/besteffort/podgone)"]);
      expect(await manager.removeOrphans(kept)).toEqual([]);
      expect(said).toHaveLength(1);
    } finally {
      rmSync(mountPoint, { recursive: true, force: true });
    }
  });
});
