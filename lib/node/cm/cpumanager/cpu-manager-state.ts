// `<root_dir>/cpu_manager_state`: the CPU manager's checkpoint in upstream's v2 format and checksum
// (pkg/kubelet/cm/cpumanager/state: policyName, defaultCpuSet, entries pod → container → cpuset, checksum),
// read at start and rewritten on every change, so the Go kubelet and this one read each other's file.
import { existsSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { checkpointChecksum, type GoValue, stringMap } from "../checksum.ts";
import { CPUSet, parseCPUSet } from "../cpuset.ts";

/** The checkpoint's name under root_dir. */
export const CPU_MANAGER_STATE_FILE = "cpu_manager_state";

/** Pod UID → container name → its exclusive CPUs. */
export type ContainerCPUAssignments = Map<string, Map<string, CPUSet>>;

/** The CPU manager's state: the shared pool and the exclusive assignments (upstream's state.State). */
export interface CPUManagerState {
  defaultCPUSet(): CPUSet;
  setDefaultCPUSet(set: CPUSet): void;
  cpuSet(podUid: string, container: string): CPUSet | undefined;
  /** The container's own CPUs, else the shared pool. */
  cpuSetOrDefault(podUid: string, container: string): CPUSet;
  assignments(): ContainerCPUAssignments;
  setCPUSet(podUid: string, container: string, set: CPUSet): void;
  delete(podUid: string, container: string): void;
}

/** The checksum of a v2 checkpoint (state.CPUManagerCheckpoint with Checksum 0), as checksum.New computes it. */
export function cpuCheckpointChecksum(
  policyName: string,
  defaultCpuSet: string,
  entries: Record<string, Record<string, string>>,
) {
  const checkpoint: GoValue = {
    kind: "struct",
    type: "state.CPUManagerCheckpoint",
    fields: [
      ["PolicyName", { kind: "string", value: policyName }],
      ["DefaultCPUSet", { kind: "string", value: defaultCpuSet }],
      [
        "Entries",
        {
          kind: "map",
          type: "map[string]map[string]string",
          entries: Object.entries(entries).map(([pod, containers]) => [pod, stringMap(containers)]),
        },
      ],
      ["Checksum", { kind: "number", type: "checksum.Checksum", value: 0 }],
    ],
  };
  return checkpointChecksum({ kind: "ptr", type: "state.CPUManagerCheckpoint", value: checkpoint });
}

/** Go's encoding/json matches keys case-insensitively: upstream's tests write "defaultCPUSet". */
const field = (object: Record<string, unknown>, name: string) =>
  object[Object.keys(object).find((key) => key.toLowerCase() === name.toLowerCase()) ?? name];

/** Parses and verifies a checkpoint's text; errors worded as upstream's restoreState. */
export function parseCPUCheckpoint(text: string, policyName: string) {
  const parsed = JSON.parse(text) as Record<string, unknown>;
  const policy = String(field(parsed, "policyName") ?? "");
  const defaultCpuSet = String(field(parsed, "defaultCpuSet") ?? "");
  const rawEntries = (field(parsed, "entries") ?? {}) as Record<string, unknown>;
  const entries: Record<string, Record<string, string>> = {};
  for (const [pod, containers] of Object.entries(rawEntries)) {
    if (typeof containers !== "object" || containers === null)
      throw new Error("json: cannot unmarshal string into Go struct field CPUManagerCheckpointV2.entries");
    entries[pod] = containers as Record<string, string>;
  }
  const checksum = Number(field(parsed, "checksum") ?? 0);
  if (checksum !== 0 && checksum !== cpuCheckpointChecksum(policy, defaultCpuSet, entries))
    throw new Error("checkpoint is corrupted");
  if (policy !== policyName)
    throw new Error(`configured policy "${policyName}" differs from state checkpoint policy "${policy}"`);
  let defaultSet: CPUSet;
  try {
    defaultSet = parseCPUSet(defaultCpuSet);
  } catch (error) {
    throw new Error(`could not parse default cpu set "${defaultCpuSet}": ${(error as Error).message}`);
  }
  const assignments: ContainerCPUAssignments = new Map();
  for (const [pod, containers] of Object.entries(entries)) {
    const byName = new Map<string, CPUSet>();
    for (const [container, text] of Object.entries(containers))
      try {
        byName.set(container, parseCPUSet(text));
      } catch (error) {
        throw new Error(
          `could not parse cpuset "${text}" for container "${container}" in pod "${pod}": ${(error as Error).message}`,
        );
      }
    assignments.set(pod, byName);
  }
  return { defaultSet, assignments };
}

/** The checkpoint's text for a state, with its checksum (json.Marshal's field order). */
export function formatCPUCheckpoint(policyName: string, defaultSet: CPUSet, assignments: ContainerCPUAssignments) {
  const entries: Record<string, Record<string, string>> = {};
  for (const [pod, containers] of [...assignments].sort(([a], [b]) => (a < b ? -1 : 1)))
    entries[pod] = Object.fromEntries(
      [...containers].sort(([a], [b]) => (a < b ? -1 : 1)).map(([name, set]) => [name, set.toString()]),
    );
  const checksum = cpuCheckpointChecksum(policyName, defaultSet.toString(), entries);
  return JSON.stringify({
    policyName,
    defaultCpuSet: defaultSet.toString(),
    ...(Object.keys(entries).length ? { entries } : {}),
    checksum,
  });
}

/**
 * The state kept in `<rootDir>/cpu_manager_state`: restored at start (a missing file starts empty and is written),
 * written through on every change. A checkpoint that cannot be restored throws upstream's message.
 */
export function createCPUManagerState(rootDir: string, policyName: string): CPUManagerState {
  const path = join(rootDir, CPU_MANAGER_STATE_FILE);
  let defaultSet = new CPUSet();
  let assignments: ContainerCPUAssignments = new Map();
  const store = () => {
    const temporary = `${path}.tmp`;
    writeFileSync(temporary, formatCPUCheckpoint(policyName, defaultSet, assignments));
    renameSync(temporary, path);
  };
  if (existsSync(path)) {
    try {
      ({ defaultSet, assignments } = parseCPUCheckpoint(readFileSync(path, "utf8"), policyName));
    } catch (error) {
      throw new Error(
        `could not restore state from checkpoint: ${(error as Error).message}, please drain this node and delete the CPU manager checkpoint file "${path}" before restarting Kubelet`,
      );
    }
  } else store();
  return {
    defaultCPUSet: () => defaultSet,
    setDefaultCPUSet(set) {
      defaultSet = set;
      store();
    },
    cpuSet: (pod, container) => assignments.get(pod)?.get(container),
    cpuSetOrDefault: (pod, container) => assignments.get(pod)?.get(container) ?? defaultSet,
    assignments: () => assignments,
    setCPUSet(pod, container, set) {
      const byName = assignments.get(pod) ?? assignments.set(pod, new Map()).get(pod)!;
      byName.set(container, set);
      store();
    },
    delete(pod, container) {
      assignments.get(pod)?.delete(container);
      if (assignments.get(pod)?.size === 0) assignments.delete(pod);
      store();
    },
  };
}
