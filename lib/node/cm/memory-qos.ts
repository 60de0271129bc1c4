// The cgroup v2 files a container's cgroup gets beyond its limits (the CRI's LinuxContainerResources.unified,
// as the Go kubelet's generateLinuxContainerResources fills it): memory.oom.group=1 unless
// singleProcessOOMKill, and with the MemoryQoS feature gate memory.high (between request and limit by
// memoryThrottlingFactor). memory.min is upstream's memoryReservationPolicy TieredReservation, which is not
// implemented here (the default policy, None, sets none). cgroup v1 has none of these files: nothing is set there.
import { parseQuantity } from "../../api/quantity.ts";
import type { V1Container } from "../../api/types.ts";

export interface MemoryQosSettings {
  /** The node's cgroup version: every file here is cgroup v2's. */
  cgroupVersion: 1 | 2;
  /** singleProcessOOMKill: an OOM kill takes one process, not the container's whole cgroup. */
  singleProcessOomKill: boolean;
  /** The MemoryQoS feature gate. */
  memoryQos: boolean;
  /** memoryThrottlingFactor, above 0 and at most 1. */
  throttlingFactor: number;
  /** Node allocatable memory (bytes): memory.high's ceiling for a container without a memory limit. */
  allocatableMemoryBytes: number;
  /** The page size memory.high is rounded down to (os.Getpagesize: 4096 on the kernels here). */
  pageSize?: number;
}

/** The container's unified map (file → value); empty when nothing applies. */
export function containerUnified(container: V1Container, settings: MemoryQosSettings): Record<string, string> {
  const unified: Record<string, string> = {};
  if (settings.cgroupVersion !== 2) return unified;
  // Ask the kernel to kill every process of the container's cgroup on OOM, as upstream does by default on v2.
  if (!settings.singleProcessOomKill) unified["memory.oom.group"] = "1";
  if (!settings.memoryQos) return unified;
  const bytes = (text: string | undefined) => (text === undefined ? 0 : Math.round(parseQuantity(text) ?? 0));
  const request = bytes(container.resources?.requests?.memory);
  const limit = bytes(container.resources?.limits?.memory);
  // Guaranteed by memory (request = limit): no throttling below the limit, so no memory.high.
  if (request !== limit) {
    const pageSize = settings.pageSize ?? 4096;
    const ceiling = limit !== 0 ? limit : settings.allocatableMemoryBytes;
    const high =
      ceiling > 0 ? Math.floor((request + (ceiling - request) * settings.throttlingFactor) / pageSize) * pageSize : 0;
    if (high !== 0 && high > request) unified["memory.high"] = String(high);
  }
  return unified;
}
