// The PLEG's relist entries from the CRI's two lists: the list decoder hands back the same frozen object for an item
// that did not change (cri-list-decoder.ts), so the entry made from it is kept with it and an unchanged node's
// relist builds nothing new, once a second on containerd 1.6 (upstream's generic PLEG relist).
import type { CriContainer, PodSandbox } from "../cri-types.ts";
import type { RelistEntry } from "../pleg/generic.ts";
import type { ContainerState } from "../runtime.ts";

/** Maps the two lists to entries, those `ours` refuses left out; an item seen before as the same object maps as before. */
export function createRelistEntries(ours: (labels: Record<string, string>) => boolean) {
  const made = new WeakMap<PodSandbox | CriContainer, RelistEntry | null>();
  const entry = (item: PodSandbox | CriContainer, state: ContainerState): RelistEntry | null => {
    let known = made.get(item);
    if (known === undefined) {
      known = ours(item.labels) ? { id: item.id, state, labels: item.labels } : null;
      made.set(item, known);
    }
    return known;
  };
  return (sandboxes: PodSandbox[], containers: CriContainer[]): RelistEntry[] => {
    const entries: RelistEntry[] = [];
    // Sandboxes relist as "running" or "exited" too: the sync loop hears of a pause that died.
    for (const s of sandboxes) {
      const e = entry(s, s.state === "SANDBOX_READY" ? "CONTAINER_RUNNING" : "CONTAINER_EXITED");
      if (e) entries.push(e);
    }
    for (const c of containers) {
      const e = entry(c, c.state);
      if (e) entries.push(e);
    }
    return entries;
  };
}
