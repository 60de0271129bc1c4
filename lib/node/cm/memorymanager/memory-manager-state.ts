// `<root_dir>/memory_manager_state`: the memory manager's checkpoint in upstream's format and checksum
// (pkg/kubelet/cm/memorymanager/state: policyName, machineState per NUMA node, entries pod → container → blocks).
import { existsSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { checkpointChecksum, type GoValue } from "../checksum.ts";

export const MEMORY_MANAGER_STATE_FILE = "memory_manager_state";

/** One memory type on one NUMA node, bytes (upstream's MemoryTable). */
export interface MemoryTable {
  total: number;
  systemReserved: number;
  allocatable: number;
  reserved: number;
  free: number;
}

/** A NUMA node's memory and the group of nodes its allocations span (upstream's NUMANodeState). */
export interface NUMANodeState {
  numberOfAssignments: number;
  memoryMap: Record<string, MemoryTable>;
  cells: number[];
}

/** NUMA node → its state. */
export type NUMANodeMap = Record<number, NUMANodeState>;

/** Memory of one type given to a container from a group of NUMA nodes. */
export interface Block {
  numaAffinity: number[];
  type: string;
  size: number;
}

/** Pod UID → container name → its blocks. */
export type ContainerMemoryAssignments = Record<string, Record<string, Block[]>>;

const uint = (value: number): GoValue => ({ kind: "number", type: "uint64", value });
const ints = (values: number[]): GoValue => ({
  kind: "slice",
  type: "[]int",
  items: values.map((value) => ({ kind: "number", type: "int", value })),
});

/** checksum.New of a state.MemoryManagerCheckpoint. */
export function memoryCheckpointChecksum(
  policyName: string,
  machine: NUMANodeMap,
  entries: ContainerMemoryAssignments,
) {
  const table = (t: MemoryTable): GoValue => ({
    kind: "ptr",
    type: "state.MemoryTable",
    value: {
      kind: "struct",
      type: "state.MemoryTable",
      fields: [
        ["TotalMemSize", uint(t.total)],
        ["SystemReserved", uint(t.systemReserved)],
        ["Allocatable", uint(t.allocatable)],
        ["Reserved", uint(t.reserved)],
        ["Free", uint(t.free)],
      ],
    },
  });
  const node = (n: NUMANodeState): GoValue => ({
    kind: "ptr",
    type: "state.NUMANodeState",
    value: {
      kind: "struct",
      type: "state.NUMANodeState",
      fields: [
        ["NumberOfAssignments", { kind: "number", type: "int", value: n.numberOfAssignments }],
        [
          "MemoryMap",
          {
            kind: "map",
            type: "map[v1.ResourceName]*state.MemoryTable",
            entries: Object.entries(n.memoryMap).map(([k, t]) => [k, table(t)]),
          },
        ],
        ["Cells", ints(n.cells)],
      ],
    },
  });
  const block = (b: Block): GoValue => ({
    kind: "struct",
    type: "state.Block",
    fields: [
      ["NUMAAffinity", ints(b.numaAffinity)],
      ["Type", { kind: "string", type: "v1.ResourceName", value: b.type }],
      ["Size", uint(b.size)],
    ],
  });
  const checkpoint: GoValue = {
    kind: "struct",
    type: "state.MemoryManagerCheckpoint",
    fields: [
      ["PolicyName", { kind: "string", value: policyName }],
      [
        "MachineState",
        {
          kind: "map",
          type: "state.NUMANodeMap",
          entries: Object.entries(machine)
            .map(([id, n]): [number, GoValue] => [Number(id), node(n)])
            .sort(([a], [b]) => a - b),
        },
      ],
      [
        "Entries",
        {
          kind: "map",
          type: "state.ContainerMemoryAssignments",
          entries: Object.entries(entries).map(([pod, containers]) => [
            pod,
            {
              kind: "map",
              type: "map[string][]state.Block",
              entries: Object.entries(containers).map(([name, blocks]) => [
                name,
                { kind: "slice", type: "[]state.Block", items: blocks.map(block) },
              ]),
            },
          ]),
        },
      ],
      ["Checksum", { kind: "number", type: "checksum.Checksum", value: 0 }],
    ],
  };
  return checkpointChecksum({ kind: "ptr", type: "state.MemoryManagerCheckpoint", value: checkpoint });
}

/** Parses and verifies a checkpoint; errors as upstream's. */
export function parseMemoryCheckpoint(text: string, policyName: string) {
  const parsed = JSON.parse(text) as {
    policyName?: string;
    machineState?: NUMANodeMap;
    entries?: ContainerMemoryAssignments;
    checksum?: number;
  };
  const machine = parsed.machineState ?? {};
  const entries = parsed.entries ?? {};
  const policy = parsed.policyName ?? "";
  if (parsed.checksum !== memoryCheckpointChecksum(policy, machine, entries))
    throw new Error("checkpoint is corrupted");
  if (policy !== policyName)
    throw new Error(
      `[memorymanager] configured policy "${policyName}" differs from state checkpoint policy "${policy}"`,
    );
  return { machine, entries };
}

/** The checkpoint's text (json.Marshal: fields in struct order, map keys sorted). */
export function formatMemoryCheckpoint(policyName: string, machine: NUMANodeMap, entries: ContainerMemoryAssignments) {
  const sortKeys = <T>(record: Record<string, T>) =>
    Object.fromEntries(Object.entries(record).sort(([a], [b]) => (a < b ? -1 : 1)));
  const sortedEntries = sortKeys(Object.fromEntries(Object.entries(entries).map(([p, c]) => [p, sortKeys(c)])));
  return JSON.stringify({
    policyName,
    machineState: machine,
    ...(Object.keys(entries).length ? { entries: sortedEntries } : {}),
    checksum: memoryCheckpointChecksum(policyName, machine, entries),
  });
}

export interface MemoryManagerState {
  machineState(): NUMANodeMap;
  setMachineState(machine: NUMANodeMap): void;
  assignments(): ContainerMemoryAssignments;
  memoryBlocks(podUid: string, container: string): Block[] | undefined;
  setMemoryBlocks(podUid: string, container: string, blocks: Block[]): void;
  delete(podUid: string, container: string): void;
}

/** The state kept in `<rootDir>/memory_manager_state`: restored at start, written through on every change. */
export function createMemoryManagerState(rootDir: string, policyName: string): MemoryManagerState {
  const path = join(rootDir, MEMORY_MANAGER_STATE_FILE);
  let machine: NUMANodeMap = {};
  let entries: ContainerMemoryAssignments = {};
  const store = () => {
    writeFileSync(`${path}.tmp`, formatMemoryCheckpoint(policyName, machine, entries));
    renameSync(`${path}.tmp`, path);
  };
  if (existsSync(path))
    try {
      ({ machine, entries } = parseMemoryCheckpoint(readFileSync(path, "utf8"), policyName));
    } catch (error) {
      throw new Error(
        `could not restore state from checkpoint: ${(error as Error).message}, please drain this node and delete the memory manager checkpoint file "${path}" before restarting Kubelet`,
      );
    }
  else store();
  return {
    machineState: () => structuredClone(machine),
    setMachineState(next) {
      machine = structuredClone(next);
      store();
    },
    assignments: () => entries,
    memoryBlocks: (pod, container) => entries[pod]?.[container],
    setMemoryBlocks(pod, container, blocks) {
      (entries[pod] ??= {})[container] = blocks;
      store();
    },
    delete(pod, container) {
      if (!entries[pod]) return;
      delete entries[pod][container];
      if (Object.keys(entries[pod]).length === 0) delete entries[pod];
      store();
    },
  };
}
