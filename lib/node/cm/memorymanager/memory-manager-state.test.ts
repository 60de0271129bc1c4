import { expect, test } from "bun:test";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  createMemoryManagerState,
  formatMemoryCheckpoint,
  MEMORY_MANAGER_STATE_FILE,
  parseMemoryCheckpoint,
} from "./memory-manager-state.ts";

// Upstream's memorymanager/state/state_checkpoint_test.go "Restore valid checkpoint".
const UPSTREAM = `{
  "policyName":"static",
  "machineState":{"0":{"numberOfAssignments":0,"memoryMap":{"memory":{"total":2048,"systemReserved":512,"allocatable":1536,"reserved":512,"free":1024}},"cells":[]}},
  "entries":{"pod":{"container1":[{"numaAffinity":[0],"type":"memory","size":512}]}},
  "checksum": 4215593881
}`;

test("upstream's sample memory checkpoint verifies and restores", () => {
  const { machine, entries } = parseMemoryCheckpoint(UPSTREAM, "static");
  expect(machine[0]!.memoryMap.memory!.free).toBe(1024);
  expect(entries.pod!.container1).toEqual([{ numaAffinity: [0], type: "memory", size: 512 }]);
});

test("a checkpoint written here carries upstream's checksum for the same state", () => {
  const { machine, entries } = parseMemoryCheckpoint(UPSTREAM, "static");
  expect(JSON.parse(formatMemoryCheckpoint("static", machine, entries)).checksum).toBe(4215593881);
});

test("a changed checkpoint is corrupted and another policy's is refused", () => {
  expect(() => parseMemoryCheckpoint(UPSTREAM.replace('"free":1024', '"free":1000'), "static")).toThrow(
    "checkpoint is corrupted",
  );
  expect(() => parseMemoryCheckpoint(UPSTREAM, "Static")).toThrow(
    '[memorymanager] configured policy "Static" differs from state checkpoint policy "static"',
  );
});

test("the state file is written through and restored, and a bad one names the file to delete", () => {
  const root = mkdtempSync(join(tmpdir(), "memstate-"));
  const state = createMemoryManagerState(root, "Static");
  state.setMemoryBlocks("uid", "app", [{ numaAffinity: [0], type: "memory", size: 1024 }]);
  expect(createMemoryManagerState(root, "Static").memoryBlocks("uid", "app")?.[0]?.size).toBe(1024);
  expect(JSON.parse(readFileSync(join(root, MEMORY_MANAGER_STATE_FILE), "utf8")).policyName).toBe("Static");
  writeFileSync(join(root, MEMORY_MANAGER_STATE_FILE), "{");
  expect(() => createMemoryManagerState(root, "Static")).toThrow(
    /could not restore state from checkpoint: .*please drain this node and delete the memory manager checkpoint file/,
  );
});
