// Pod Table rows kept as JSON, rendered once per pod version, with only AGE and RESTARTS' "(… ago)" written per answer.
//
// Decision: as kube-apiserver's watch cache keeps each object serialized (cachingObject), a 30,000-pod Table is a
// join of kept strings, not a Table of objects stringified whole (a third of the CPU, bench/results.md). Rows are
// keyed by the pod object itself (a WeakMap): the pod cache (watch.ts) makes a new object for every change and
// never edits one, so a changed pod misses the cache and a dropped one frees its row.
import type { Pod } from "../../api/types.ts";
import { humanDuration, POD_COLUMNS, podPrint, podRowObject, rowConditions, type IncludeObject } from "./table.ts";

/** A row's JSON around its time-dependent cells. */
interface RowParts {
  /** `{"cells":[NAME,READY,STATUS,` */
  head: string;
  /** RESTARTS when it does not depend on the time; else undefined and `restarts`/`lastRestart` write it. */
  restartText: string | undefined;
  restarts: number;
  lastRestart: number;
  /** Epoch ms AGE counts from; NaN for `<unknown>`. */
  created: number;
  /** `,IP,NODE,NOMINATED,GATES]` and the conditions and object, to the row's closing brace. */
  tail: string;
}

export interface PodRows {
  /** One pod's row as JSON.stringify(podRow(pod, now, include)) writes it. */
  row(pod: Pod, now: number, include: IncludeObject): string;
  /** The Table JSON.stringify(podTable(pods, …)) writes, with `metadata` as given. */
  table(pods: Pod[], options: { now: number; include: IncludeObject; metadata: object }): string;
  /** Renders the rows of `pods` not kept yet, so that the next table of them only joins. */
  warm(pods: Pod[], include: IncludeObject): void;
}

const COLUMNS_JSON = JSON.stringify(POD_COLUMNS);

function render(pod: Pod, include: IncludeObject): RowParts {
  const p = podPrint(pod);
  const conditions = rowConditions(pod);
  const object = podRowObject(pod, include);
  const restartText = p.restarts !== 0 && p.lastRestart > 0 ? undefined : JSON.stringify(String(p.restarts));
  return {
    head: `{"cells":[${JSON.stringify(p.name)},${JSON.stringify(p.ready)},${JSON.stringify(p.reason)},`,
    restartText,
    restarts: p.restarts,
    lastRestart: p.lastRestart,
    created: p.created,
    tail:
      `,${JSON.stringify(p.wide).slice(1)}` +
      (conditions ? `,"conditions":${JSON.stringify(conditions)}` : "") +
      (object ? `,"object":${JSON.stringify(object)}` : "") +
      "}",
  };
}

export function createPodRows(): PodRows {
  const kept = new WeakMap<Pod, Partial<Record<IncludeObject, RowParts>>>();

  const parts = (pod: Pod, include: IncludeObject): RowParts => {
    let byInclude = kept.get(pod);
    if (!byInclude) kept.set(pod, (byInclude = {}));
    return (byInclude[include] ??= render(pod, include));
  };

  // humanDuration's words are letters, digits and "<>": none needs escaping in JSON.
  const row = (pod: Pod, now: number, include: IncludeObject) => {
    const r = parts(pod, include);
    const restart = r.restartText ?? `"${r.restarts} (${humanDuration(now - r.lastRestart)} ago)"`;
    const age = Number.isNaN(r.created) ? '"<unknown>"' : `"${humanDuration(now - r.created)}"`;
    return `${r.head}${restart},${age}${r.tail}`;
  };

  return {
    row,
    table(pods, { now, include, metadata }) {
      const rows = new Array<string>(pods.length);
      for (let i = 0; i < pods.length; i++) rows[i] = row(pods[i]!, now, include);
      return `{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":${JSON.stringify(metadata)},"columnDefinitions":${COLUMNS_JSON},"rows":[${rows.join(",")}]}`;
    },
    warm(pods, include) {
      for (const pod of pods) parts(pod, include);
    },
  };
}
