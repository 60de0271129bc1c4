import { afterAll, expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseDuration } from "../../api/duration.ts";
import { createEventFd } from "../../platform/libc.ts";
import { parseThresholds } from "./eviction-thresholds.ts";
import { createMemcgNotifier, memcgThresholdBytes } from "./memcg-notifier.ts";

const Mi = 2 ** 20;

test("the usage threshold is capacity less the memory.available threshold plus inactive file pages", () => {
  const [threshold] = parseThresholds(
    { hard: { "memory.available": "100Mi" }, soft: {}, softGracePeriod: {} },
    parseDuration,
  );
  const memory = {
    capacityBytes: 1000 * Mi,
    availableBytes: 600 * Mi,
    workingSetBytes: 400 * Mi,
    usageBytes: 450 * Mi,
  };
  expect(memcgThresholdBytes(memory, threshold!)).toBe(950 * Mi);
  const [percent] = parseThresholds(
    { hard: { "memory.available": "10%" }, soft: {}, softGracePeriod: {} },
    parseDuration,
  );
  expect(memcgThresholdBytes({ ...memory, usageBytes: 400 * Mi }, percent!)).toBe(900 * Mi);
});

test("without a cgroup.event_control (cgroup v2, or not a memory cgroup) it says why and arms nothing", async () => {
  const dir = mkdtempSync(join(tmpdir(), "memcg-v2-"));
  const notifier = createMemcgNotifier({ cgroupPath: dir, onCrossed: () => {} }, { eventfd: createEventFd });
  expect(await notifier.setThreshold(1)).toBe(
    `${dir}/cgroup.event_control does not exist: threshold notifications are cgroup v1's (upstream disables them on cgroup v2 too)`,
  );
  rmSync(dir, { recursive: true });
});

// The real kernel: a memory cgroup of the test's own on this cgroup v1 host, filled by a process inside it.
const cgroup = `/sys/fs/cgroup/memory/kubelet-test-memcg-${process.pid}`;
const shm = `/dev/shm/kubelet-test-memcg-${process.pid}`;
afterAll(() => {
  rmSync(shm, { force: true });
  try {
    rmdirSync(cgroup);
  } catch {
    // never made
  }
});

test("on cgroup v1 the kernel signals the crossing and onCrossed runs; a replaced or stopped registration closes its eventfd", async () => {
  mkdirSync(cgroup);
  const usage = Number(readFileSync(join(cgroup, "memory.usage_in_bytes"), "utf8"));
  let crossings = 0;
  const fds: number[] = [];
  let crossed: () => void = () => {};
  const notifier = createMemcgNotifier(
    {
      cgroupPath: cgroup,
      onCrossed: () => {
        crossings++;
        crossed();
      },
    },
    {
      eventfd: async () => {
        const fd = (await createEventFd())!;
        fds.push(fd);
        return fd;
      },
    },
  );
  const closed = async (fd: number) => {
    while (existsSync(`/proc/self/fd/${fd}`)) await new Promise((r) => setTimeout(r, 10));
  };
  expect(await notifier.setThreshold(usage + 1024 * Mi)).toBeUndefined(); // replaced below before it can fire
  expect(await notifier.setThreshold(usage + 4 * Mi)).toBeUndefined();
  await closed(fds[0]!);
  const signalled = new Promise<void>((resolve) => (crossed = resolve));
  // 10 MiB of tmpfs pages charged to the cgroup by a process inside it.
  const fill = spawnSync(
    "sh",
    ["-c", `echo $$ > ${cgroup}/cgroup.procs && exec busybox dd if=/dev/zero of=${shm} bs=1048576 count=10`],
    { encoding: "utf8" },
  );
  expect(fill.status).toBe(0);
  await signalled;
  expect(crossings).toBe(1);
  notifier.stop();
  await closed(fds[1]!);
});
