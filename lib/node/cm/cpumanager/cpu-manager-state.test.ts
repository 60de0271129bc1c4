import { expect, test } from "bun:test";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CPUSet } from "../cpuset.ts";
import {
  CPU_MANAGER_STATE_FILE,
  createCPUManagerState,
  formatCPUCheckpoint,
  parseCPUCheckpoint,
} from "./cpu-manager-state.ts";

// Upstream's state_checkpoint_test.go samples (the v2 format) and their checksums.
const UPSTREAM_EMPTY = `{"policyName": "none", "defaultCPUSet": "4-6", "entries": {}, "checksum": 354655845}`;
const UPSTREAM_ENTRIES = `{
  "policyName": "none",
  "defaultCPUSet": "1-3",
  "entries": {"pod": {"container1": "4-6", "container2": "1-3"}},
  "checksum": 3610638499
}`;

test("upstream's sample checkpoints verify and restore", () => {
  expect(parseCPUCheckpoint(UPSTREAM_EMPTY, "none").defaultSet.toString()).toBe("4-6");
  const { defaultSet, assignments } = parseCPUCheckpoint(UPSTREAM_ENTRIES, "none");
  expect(defaultSet.toString()).toBe("1-3");
  expect(assignments.get("pod")?.get("container1")?.toString()).toBe("4-6");
});

test("a checkpoint written here carries the checksum upstream computes for the same state", () => {
  const assignments = new Map([
    [
      "pod",
      new Map([
        ["container2", new CPUSet([1, 2, 3])],
        ["container1", new CPUSet([4, 5, 6])],
      ]),
    ],
  ]);
  const text = formatCPUCheckpoint("none", new CPUSet([1, 2, 3]), assignments);
  expect(JSON.parse(text)).toEqual({
    policyName: "none",
    defaultCpuSet: "1-3",
    entries: { pod: { container1: "4-6", container2: "1-3" } },
    checksum: 3610638499,
  });
  expect(JSON.parse(formatCPUCheckpoint("none", new CPUSet([4, 5, 6]), new Map())).checksum).toBe(354655845);
});

test("a changed checkpoint is refused as corrupted", () => {
  expect(() =>
    parseCPUCheckpoint(UPSTREAM_ENTRIES.replace('"1-3",\n  "entries"', '"1-2",\n  "entries"'), "none"),
  ).toThrow("checkpoint is corrupted");
});

test("a checkpoint of another policy is refused with upstream's words", () => {
  expect(() => parseCPUCheckpoint(UPSTREAM_EMPTY, "static")).toThrow(
    'configured policy "static" differs from state checkpoint policy "none"',
  );
});

test("a checkpoint without a checksum is accepted, as the old file backend wrote them", () => {
  expect(
    parseCPUCheckpoint(`{"policyName":"static","defaultCpuSet":"1.3"}`.replace("1.3", "0-1"), "static").defaultSet.size,
  ).toBe(2);
  expect(() => parseCPUCheckpoint(`{"policyName":"static","defaultCpuSet":"1.3"}`, "static")).toThrow(
    'could not parse default cpu set "1.3": strconv.Atoi: parsing "1.3": invalid syntax',
  );
});

test("the state file is written at start, through on each change, and restored by the next start", () => {
  const root = mkdtempSync(join(tmpdir(), "cpustate-"));
  const state = createCPUManagerState(root, "static");
  expect(JSON.parse(readFileSync(join(root, CPU_MANAGER_STATE_FILE), "utf8")).policyName).toBe("static");
  state.setDefaultCPUSet(new CPUSet([0, 2, 3]));
  state.setCPUSet("uid-1", "app", new CPUSet([1]));
  const again = createCPUManagerState(root, "static");
  expect(again.defaultCPUSet().toString()).toBe("0,2-3");
  expect(again.cpuSetOrDefault("uid-1", "app").toString()).toBe("1");
  expect(again.cpuSetOrDefault("uid-2", "app").toString()).toBe("0,2-3");
  again.delete("uid-1", "app");
  expect(createCPUManagerState(root, "static").assignments().size).toBe(0);
});

test("a start with another policy than the file's is refused, naming the file to delete", () => {
  const root = mkdtempSync(join(tmpdir(), "cpustate-"));
  writeFileSync(join(root, CPU_MANAGER_STATE_FILE), UPSTREAM_EMPTY);
  expect(() => createCPUManagerState(root, "static")).toThrow(
    `could not restore state from checkpoint: configured policy "static" differs from state checkpoint policy "none", please drain this node and delete the CPU manager checkpoint file "${join(root, CPU_MANAGER_STATE_FILE)}" before restarting Kubelet`,
  );
});
