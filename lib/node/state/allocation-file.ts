// The resources allocated to each pod, in a small JSON file under root_dir (state-file.ts: atomic, coalesced
// writes): the Go kubelet's allocated_pods_state checkpoint, so a resize deferred before a restart stays deferred.
import type { V1Container } from "../../api/types.ts";
import type { Logger } from "../../log.ts";
import { stateFile } from "./state-file.ts";

/** The checkpoint's name under root_dir. */
export const ALLOCATION_FILE = "allocated_pods_state.json";

/** The resources allocated to a pod: container name → its resources (`{}` for none). */
export type Allocation = Record<string, NonNullable<V1Container["resources"]>>;

/** Where the allocations are kept across kubelet restarts, by pod UID. */
export interface AllocationCheckpoint {
  load(): Record<string, Allocation>;
  /** Called after every change with every allocation; writes are the checkpoint's business (async, atomic). */
  save(allocations: Record<string, Allocation>): void;
}

/** The allocation checkpoint at `path`; a missing or unreadable file starts empty (with a warning when corrupt). */
export function allocationFile(path: string, log: Logger): AllocationCheckpoint & { flushed(): Promise<void> } {
  const isObject = (value: unknown): value is Record<string, unknown> =>
    typeof value === "object" && value !== null && !Array.isArray(value);
  return stateFile(path, log, {
    what: "resource allocations",
    consequence: "pods are admitted again with the resources their manifests ask",
    empty: () => ({}),
    accept: (parsed) =>
      Object.fromEntries(
        Object.entries(parsed as Record<string, unknown>).filter(
          (entry): entry is [string, Allocation] => isObject(entry[1]) && Object.values(entry[1]).every(isObject),
        ),
      ),
  });
}
