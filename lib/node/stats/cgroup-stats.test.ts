import { afterAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { cgroupStats } from "../../testing/usage-samples.ts";
import { createCgroupReader } from "./cgroup-stats.ts";

const roots: string[] = [];
afterAll(() => roots.forEach((r) => rmSync(r, { recursive: true, force: true })));

/** A cgroup tree under a temporary mount point: files by `controller/path/file`. */
function tree(files: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), "kubelet-cgroup-stats-"));
  roots.push(root);
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(join(root, path, ".."), { recursive: true });
    writeFileSync(join(root, path), text);
  }
  return root;
}

const ID = "a".repeat(64);

describe("cgroup stats", () => {
  test("v1: CPU from cpuacct, memory with working set, rss, cache and page faults from memory.stat, limits and quota", async () => {
    const pod = "kubepods/podu1";
    const mountPoint = tree({
      [`cpuacct/${pod}/cpuacct.usage`]: "2500000000\n",
      [`cpuacct/${pod}/cpuacct.stat`]: "user 150\nsystem 50\n",
      [`memory/${pod}/memory.usage_in_bytes`]: "10000\n",
      [`memory/${pod}/memory.max_usage_in_bytes`]: "12000\n",
      [`memory/${pod}/memory.limit_in_bytes`]: "67108864\n",
      [`memory/${pod}/memory.failcnt`]: "2\n",
      [`memory/${pod}/memory.stat`]:
        "rss 1\ntotal_rss 4000\ntotal_cache 5000\ntotal_mapped_file 300\ntotal_inactive_file 1000\ntotal_pgfault 77\ntotal_pgmajfault 3\n",
      [`cpu/${pod}/cpu.shares`]: "102\n",
      [`cpu/${pod}/cpu.cfs_quota_us`]: "10000\n",
      [`cpu/${pod}/cpu.cfs_period_us`]: "100000\n",
      [`pids/${pod}/pids.current`]: "4\n",
      [`cpuacct/${pod}/${ID}/cpuacct.usage`]: "1\n",
      [`cpuacct/${pod}/not-a-container/cpuacct.usage`]: "1\n",
    });
    const reader = createCgroupReader({ mountPoint, version: 1 });
    expect(await reader.read(`/${pod}`)).toEqual(
      cgroupStats({
        cpuUsageNanoseconds: 2.5e9,
        memoryFailcnt: 2,
        memoryLimitBytes: 67_108_864,
        cpuQuota: 10_000,
        pids: 4,
      }),
    );
    expect(await reader.containers(`/${pod}`)).toEqual([{ id: ID, path: `/${pod}/${ID}` }]);
    expect(await reader.read("/kubepods/absent")).toBeUndefined();
    // A "usage" read (/metrics/resource) opens only the files with CPU and memory use.
    const usage = await reader.read(`/${pod}`, "usage");
    expect(usage).toMatchObject({ cpuUsageNanoseconds: 2.5e9, memoryWorkingSetBytes: 9000, memoryFailcnt: 0, pids: 0 });
    expect(usage).not.toHaveProperty("memoryLimitBytes");
    // A "limits" read (a container in the stats analyzer's collection) adds the memory limit, not the process count.
    const limits = await reader.read(`/${pod}`, "limits");
    expect(limits).toMatchObject({ memoryLimitBytes: 67_108_864, pids: 0 });
    // A "summary" read (a pod in the same collection) adds the memory limit and the process count, nothing else.
    const summary = await reader.read(`/${pod}`, "summary");
    expect(summary).toEqual(
      cgroupStats({
        cpuUsageNanoseconds: 2.5e9,
        cpuUserNanoseconds: 0,
        cpuSystemNanoseconds: 0,
        memoryMaxUsageBytes: 0,
        memoryLimitBytes: 67_108_864,
        cpuShares: 1024,
        pids: 4,
      }),
    );
  });

  test("v2: cpu.stat, memory.current and memory.stat; max is unlimited; systemd scopes name their container", async () => {
    const pod = "kubepods.slice/kubepods-podu2.slice";
    const mountPoint = tree({
      [`${pod}/cpu.stat`]: "usage_usec 2000\nuser_usec 1500\nsystem_usec 500\n",
      [`${pod}/memory.current`]: "8000\n",
      [`${pod}/memory.stat`]: "anon 3000\nfile 4000\nfile_mapped 100\ninactive_file 500\npgfault 9\npgmajfault 1\n",
      [`${pod}/memory.max`]: "max\n",
      [`${pod}/cpu.max`]: "max 100000\n",
      [`${pod}/cpu.weight`]: "1\n",
      [`${pod}/cri-containerd-${ID}.scope/cpu.stat`]: "usage_usec 1\n",
    });
    const reader = createCgroupReader({ mountPoint, version: 2 });
    const stats = await reader.read(`/${pod}`);
    expect(stats).toMatchObject({
      cpuUsageNanoseconds: 2e6,
      cpuUserNanoseconds: 1.5e6,
      memoryWorkingSetBytes: 7500,
      memoryRssBytes: 3000,
      memoryCacheBytes: 4000,
      pageFaults: 9,
      majorPageFaults: 1,
      cpuShares: 2,
      cpuPeriod: 100_000,
    });
    expect(stats).not.toHaveProperty("memoryLimitBytes");
    expect(stats).not.toHaveProperty("cpuQuota");
    expect(await reader.containers(`/${pod}`)).toEqual([{ id: ID, path: `/${pod}/cri-containerd-${ID}.scope` }]);
  });

  test("a memory.stat key is matched whole, on the first line too: rss and total_rss_huge are not total_rss", async () => {
    const pod = "kubepods/podu3";
    const mountPoint = tree({
      [`cpuacct/${pod}/cpuacct.usage`]: "1\n",
      [`memory/${pod}/memory.usage_in_bytes`]: "10000\n",
      [`memory/${pod}/memory.stat`]:
        "total_rss_huge 7\nrss 1\ntotal_rss 4000\ntotal_cache 5000\ntotal_inactive_file x\n",
      [`cpuacct/${pod}/cpuacct.stat`]: "user 3\nsystem 1\n",
    });
    const stats = await createCgroupReader({ mountPoint, version: 1 }).read(`/${pod}`);
    expect(stats).toMatchObject({
      memoryRssBytes: 4000,
      memoryCacheBytes: 5000,
      memoryWorkingSetBytes: 10_000,
      cpuUserNanoseconds: 3e7,
      cpuSystemNanoseconds: 1e7,
    });
  });
  test("a read under the same limits key takes the limit files from the last read; a new key or none reads them again", async () => {
    const pod = "kubepods/podu4";
    const file = (controller: string, name: string) => `${controller}/${pod}/${name}`;
    const files = (limit: number, quota: number, usage: number) => ({
      [file("cpuacct", "cpuacct.usage")]: `${usage}\n`,
      [file("memory", "memory.usage_in_bytes")]: "10000\n",
      [file("memory", "memory.limit_in_bytes")]: `${limit}\n`,
      [file("cpu", "cpu.shares")]: "102\n",
      [file("cpu", "cpu.cfs_quota_us")]: `${quota}\n`,
      [file("cpu", "cpu.cfs_period_us")]: "100000\n",
    });
    const mountPoint = tree(files(64, 10_000, 1));
    const reader = createCgroupReader({ mountPoint, version: 1 });
    const figures = async (key?: string) => {
      const stats = await reader.read(`/${pod}`, "all", key);
      return [stats?.cpuUsageNanoseconds, stats?.memoryLimitBytes, stats?.cpuQuota];
    };
    expect(await figures("started")).toEqual([1, 64, 10_000]);
    // Resized beside the key: the counters are read, the limits are the last read's.
    for (const [path, text] of Object.entries(files(128, 20_000, 2))) writeFileSync(join(mountPoint, path), text);
    expect(await figures("started")).toEqual([2, 64, 10_000]);
    expect(await figures("resized")).toEqual([2, 128, 20_000]);
    writeFileSync(join(mountPoint, file("memory", "memory.limit_in_bytes")), "256\n");
    expect(await figures()).toEqual([2, 256, 20_000]);
  });

  test("a limit file that could not be read is read again under the same key", async () => {
    const pod = "kubepods.slice/kubepods-podu5.slice";
    const mountPoint = tree({ [`${pod}/cpu.stat`]: "usage_usec 1\n", [`${pod}/memory.current`]: "10\n" });
    const reader = createCgroupReader({ mountPoint, version: 2 });
    expect(await reader.read(`/${pod}`, "all", "k")).not.toHaveProperty("memoryLimitBytes");
    writeFileSync(join(mountPoint, pod, "memory.max"), "4096\n");
    expect(await reader.read(`/${pod}`, "all", "k")).toMatchObject({ memoryLimitBytes: 4096 });
  });
});
