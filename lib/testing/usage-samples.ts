// Cgroup stats and a usage sample of one pod (an app container and its sandbox) for the tests of the
// resource analyzer and the /metrics/resource and /metrics/cadvisor renderers.
import type { CgroupStats } from "../node/stats/cgroup-stats.ts";
import type { UsageSample } from "../node/stats/usage-sampler.ts";

/** A cgroup's stats: 2 s of CPU, 9000 bytes of working set, unless overridden. */
export function cgroupStats(overrides: Partial<CgroupStats> = {}): CgroupStats {
  return {
    cpuUsageNanoseconds: 2e9,
    cpuUserNanoseconds: 1.5e9,
    cpuSystemNanoseconds: 0.5e9,
    memoryUsageBytes: 10_000,
    memoryMaxUsageBytes: 12_000,
    memoryWorkingSetBytes: 9000,
    memoryRssBytes: 4000,
    memoryCacheBytes: 5000,
    memoryMappedFileBytes: 300,
    memorySwapBytes: 0,
    memoryFailcnt: 0,
    pageFaults: 77,
    majorPageFaults: 3,
    cpuShares: 102,
    cpuPeriod: 100_000,
    pids: 2,
    ...overrides,
  };
}

/** Pod "web" in "default": container "app" (id app-id) and its sandbox (id pause-id), sampled at `time`. */
export function usageSample(time = 1_700_000_000_000): UsageSample {
  return {
    time,
    root: cgroupStats({ cpuUsageNanoseconds: 100e9 }),
    pods: [
      {
        uid: "u1",
        name: "web",
        namespace: "default",
        cgroup: "/kubepods/podu1",
        stats: cgroupStats({ cpuUsageNanoseconds: 3e9, memoryLimitBytes: 64 * 2 ** 20 }),
        interfaces: [
          {
            name: "eth0",
            rxBytes: 10,
            rxPackets: 1,
            rxErrors: 0,
            rxDropped: 0,
            txBytes: 20,
            txPackets: 2,
            txErrors: 0,
            txDropped: 0,
          },
        ],
        containers: [
          {
            id: "app-id",
            name: "app",
            runtimeName: "k8s_app_web_default_u1_0",
            image: "local/busybox:stable",
            createdAt: 1_600_000_000_000,
            sandbox: false,
            cgroup: "/kubepods/podu1/app-id",
            stats: cgroupStats({ memoryLimitBytes: 64 * 2 ** 20, cpuQuota: 10_000 }),
            rootfsBytes: 8192,
          },
          {
            id: "pause-id",
            name: "POD",
            runtimeName: "pause-id",
            image: "",
            createdAt: 1_600_000_000_000,
            sandbox: true,
            cgroup: "/kubepods/podu1/pause-id",
            stats: cgroupStats({ cpuUsageNanoseconds: 1e7 }),
          },
        ],
      },
    ],
  };
}
