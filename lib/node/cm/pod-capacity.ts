// The node's pod capacity as the Go kubelet computes it: maxPods, bounded by podsPerCore × the CPU
// cores when podsPerCore is set; admission and the node record both use it.

/** maxPods, or podsPerCore × cores when that is lower (podsPerCore 0 = no such bound). */
export function podCapacity(maxPods: number, podsPerCore: number, cores: number): number {
  return podsPerCore > 0 ? Math.min(maxPods, podsPerCore * cores) : maxPods;
}
