import { expect, test } from "bun:test";
import { pidStats } from "./node-signals.ts";

const proc =
  (files: Record<string, string>) =>
  async (path: string): Promise<string> => {
    if (path in files) return files[path]!;
    throw Object.assign(new Error(`ENOENT: ${path}`), { code: "ENOENT" });
  };

test("pid.available is the lower of pid_max and threads-max minus the tasks /proc/loadavg counts", async () => {
  const read = proc({
    "/proc/sys/kernel/pid_max": "4194304\n",
    "/proc/sys/kernel/threads-max": "192000\n",
    "/proc/loadavg": "0.52 0.58 0.59 3/1234 56789\n",
  });
  expect(await pidStats(read)).toEqual({ capacity: 192000, available: 192000 - 1234 });
});

test("without /proc the pid signal is left out (it meets no threshold)", async () => {
  expect(await pidStats(proc({}))).toBeUndefined();
});
