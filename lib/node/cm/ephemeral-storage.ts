// Node allocatable ephemeral-storage (the Go kubelet's GetNodeAllocatableReservation for it): the capacity of
// root_dir's filesystem less kubeReserved and systemReserved ephemeral-storage and the hard nodefs.available
// eviction threshold. Read once at start, as the kubelet reads the root filesystem's capacity.
import { statfsSync } from "node:fs";
import { dirname } from "node:path";
import { parseQuantity } from "../../api/quantity.ts";

/** Bytes of the filesystem holding `path`, or of its nearest existing parent (root_dir may not exist yet); 0 when none. */
export function filesystemCapacity(
  path: string,
  statfs: (path: string) => { blocks: number; bsize: number } = statfsSync,
): number {
  for (let at = path; ; at = dirname(at)) {
    try {
      const fs = statfs(at);
      return fs.blocks * fs.bsize;
    } catch {
      if (dirname(at) === at) return 0;
    }
  }
}

/** Allocatable ephemeral-storage in bytes (never below 0). */
export function ephemeralStorageAllocatable(
  capacityBytes: number,
  reserved: { kube: Record<string, string>; system: Record<string, string>; evictionHard: Record<string, string> },
): number {
  const amount = (text: string | undefined) => {
    if (text === undefined) return 0;
    if (text.endsWith("%")) return (Number(text.slice(0, -1)) / 100) * capacityBytes;
    return parseQuantity(text) ?? 0;
  };
  const reservedBytes =
    amount(reserved.kube["ephemeral-storage"]) +
    amount(reserved.system["ephemeral-storage"]) +
    amount(reserved.evictionHard["nodefs.available"]);
  return Math.max(0, Math.round(capacityBytes - reservedBytes));
}
