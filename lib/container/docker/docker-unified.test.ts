import { afterAll, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { writeUnified } from "./docker-unified.ts";

const dir = mkdtempSync(join(tmpdir(), "docker-unified-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const roots = { proc: join(dir, "proc"), cgroup: join(dir, "cgroup") };

test("the files go into the container's own cgroup v2, as /proc/<pid>/cgroup names it", async () => {
  mkdirSync(join(roots.proc, "42"), { recursive: true });
  writeFileSync(join(roots.proc, "42", "cgroup"), "0::/kubepods/burstable/podu1/abc\n");
  const cgroup = join(roots.cgroup, "kubepods/burstable/podu1/abc");
  mkdirSync(cgroup, { recursive: true });
  await writeUnified(42, { "memory.oom.group": "1", "memory.high": "954204160" }, "container app", roots);
  expect(readFileSync(join(cgroup, "memory.oom.group"), "utf8")).toBe("1");
  expect(readFileSync(join(cgroup, "memory.high"), "utf8")).toBe("954204160");
});

test("a process without a cgroup v2 path is an error naming the files and the container", async () => {
  mkdirSync(join(roots.proc, "7"), { recursive: true });
  writeFileSync(join(roots.proc, "7", "cgroup"), "4:memory:/docker/abc\n1:name=systemd:/docker/abc\n");
  await expect(writeUnified(7, { "memory.oom.group": "1" }, "container app", roots)).rejects.toMatchObject({
    message: "cannot apply memory.oom.group to container app: process 7 has no cgroup v2 path in /proc/7/cgroup",
  });
});
