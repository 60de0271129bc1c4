// The merge store (the Go PodConfig/podStorage): per-source pod state, SET/ADD/UPDATE/REMOVE,
// three notification modes, strictly ordered delivery, and reports of every pod it drops. The
// ConfigMaps and Secrets that come with the pods are kept per source the same way (config-store.ts).
import type { Logger } from "../log.ts";
import type { KubeletMetrics } from "../metrics.ts";
import { KEEPING, type SourceSnapshot } from "./source.ts";
import {
  ANNOTATION,
  formatIssue,
  podKey,
  type FieldIssue,
  type Pod,
  type PodOperation,
  type PodUpdate,
  type RejectedPod,
  type SourceName,
} from "../api/types.ts";
import { validatePod } from "../api/validation.ts";
import { applyManifestStrictness } from "../api/manifest-strict.ts";
import { podSpecHash } from "../api/hash.ts";
import type { ConfigLookup, ConfigObject } from "../api/config-objects.ts";
import { createConfigStore } from "./config-store.ts";

/** How changes reach listeners (the Go PodConfigNotificationMode). */
export type NotificationMode = "Snapshot" | "SnapshotAndUpdates" | "Incremental";

export interface PodStoreOptions {
  /** Default SnapshotAndUpdates, the kubelet's. */
  mode?: NotificationMode;
  /** The configured sources; readiness waits for each to merge once. Others (pushes) may merge too. */
  sources: SourceName[];
  allowPrivileged?: boolean;
  allowSensitiveHostPaths?: boolean;
  /** --trusted_sources and the configuration's protected paths: see api/host-paths.ts. */
  trustedSources?: readonly string[];
  protectedHostPaths?: readonly string[];
  /** --strict_manifests: an unknown field rejects the pod; false (default here; `run` sets it): warned about and ignored. */
  strictManifests?: boolean;
  /**
   * Told of each new rejection that names a pod (the kept last good version, else the pod as read), once
   * until it changes, for a Warning event; `message` is the rejection's errors.
   */
  onRejected?: (pod: { metadata: { namespace: string; name: string; uid: string } }, message: string) => void;
  /** Gives each incoming pod its identity on this node (its UID: see api/pod-uid.ts); default: as read. */
  identify?: (pod: Pod) => Pod;
  log?: Logger;
  metrics?: KubeletMetrics;
}

export interface PodStore {
  /** Applies one operation from a source; `rejected` are the source's parse-level rejections. */
  merge(source: SourceName, op: PodOperation, pods: Pod[], rejected?: RejectedPod[]): void;
  /**
   * A source snapshot: its ConfigMaps and Secrets (mergeConfigs SET), then merge(source, "SET", snapshot.pods,
   * snapshot.rejected), so a new pod finds the objects that came with it.
   */
  apply(source: SourceName, snapshot: SourceSnapshot): void;
  /** Applies one operation to a source's ConfigMaps and Secrets. */
  mergeConfigs(source: SourceName, op: PodOperation, objects: ConfigObject[]): void;
  /** The accepted ConfigMaps and Secrets, first claiming source wins; all(): every one (the API's lists). */
  readonly configs: ConfigLookup & { all(): ConfigObject[] };
  /** Called with the keys (`ConfigMap/ns/name`) of objects that appeared, changed or went away. */
  subscribeConfigs(listener: (changed: ReadonlySet<string>) => void): () => void;
  /** Listeners run synchronously, in order; returns the unsubscribe function. */
  subscribe(listener: (update: PodUpdate) => void): () => void;
  /** Re-sends the merged state as a SET, even when empty. */
  sync(): void;
  /** Every accepted pod: source order, then arrival order. */
  mergedState(): Pod[];
  /** True once every configured source has merged at least once, and none is not ready now. */
  allSourcesReady(): boolean;
  /** The sources not ready now, with why: never merged yet, or their last snapshot said not ready. */
  sourcesNotReady(): Array<{ source: SourceName; reason: string }>;
  whenAllSourcesReady(): Promise<void>;
  /** Problems standing now: invalid pods, duplicates, name conflicts, parse errors. */
  rejected(): RejectedPod[];
  /** The running pods whose newest edit was refused (their last good version runs), by namespace/name, with why. */
  refusedEdits(): ReadonlyMap<string, string>;
  /** Grows whenever refusedEdits() may have changed. */
  refusedEditsVersion(): number;
}

export function createPodStore(options: PodStoreOptions): PodStore {
  const mode = options.mode ?? "SnapshotAndUpdates";
  const validation = {
    allowPrivileged: options.allowPrivileged ?? false,
    allowSensitiveHostPaths: options.allowSensitiveHostPaths ?? false,
    trustedSources: options.trustedSources,
    protectedHostPaths: options.protectedHostPaths,
  };
  const order: SourceName[] = [...options.sources];
  const pods = new Map<SourceName, Map<string, Pod>>();
  const owner = new Map<string, SourceName>();
  const seen = new Set<SourceName>();
  const problems = new Map<SourceName, RejectedPod[]>();
  const notReady = new Map<SourceName, string>();
  const logged = new Map<SourceName, Set<string>>();
  const strict = options.strictManifests ?? false;
  /** The stored pods each standing rejection keeps running (its last good version). */
  const keptBy = new WeakMap<RejectedPod, Pod[]>();
  const validated = new Map<string, { issues: FieldIssue[]; errors: FieldIssue[] }>();
  const listeners = new Set<(update: PodUpdate) => void>();
  const queue: PodUpdate[] = [];
  let draining = false;
  let markReady: () => void = () => {};
  const ready = new Promise<void>((resolve) => (markReady = resolve));
  if (order.length === 0) markReady();

  const emit = (update: PodUpdate) => {
    queue.push(update);
    if (draining) return; // a listener merged re-entrantly: its updates follow in order
    draining = true;
    try {
      while (queue.length) {
        const next = queue.shift()!;
        for (const listener of listeners) {
          try {
            listener(next);
          } catch (error) {
            options.log?.error(`pod update listener failed: ${(error as Error).message}`);
          }
        }
      }
    } finally {
      draining = false;
    }
  };

  const configStore = createConfigStore({ order, log: options.log, metrics: options.metrics });

  const mergedState = () => order.flatMap((source) => [...(pods.get(source)?.values() ?? [])]);

  /** Each source's last incoming pods: with the stored ones, the versions `validated` must keep. */
  const lastIncoming = new Map<SourceName, Pod[]>();
  // Without a sweep the cache kept every version ever sent, one entry per edit or new pod for the
  // life of the kubelet (the soak's churn showed it). The sweep runs only once the cache holds twice
  // the live versions, so its cost is spread over the validations that filled it.
  const forgetOldVersions = (source: SourceName, incoming: Pod[]) => {
    lastIncoming.set(source, incoming);
    let live = 0;
    for (const [name, list] of lastIncoming) live += list.length + (pods.get(name)?.size ?? 0);
    if (validated.size <= 2 * live + 64) return;
    const keep = new Set<string>();
    for (const [name, list] of lastIncoming)
      for (const pod of [...list, ...(pods.get(name)?.values() ?? [])]) keep.add(hashOf(pod));
    for (const hash of validated.keys()) if (!keep.has(hash)) validated.delete(hash);
  };

  /** Validation errors by pod hash, so an unchanged pod is never re-validated. */
  const errorsOf = (pod: Pod): FieldIssue[] => {
    const hash = hashOf(pod);
    let result = validated.get(hash);
    if (!result) {
      const issues = applyManifestStrictness(validatePod(pod, validation), strict);
      result = { issues, errors: issues.filter((i) => i.severity === "error") };
      validated.set(hash, result);
      const warnings = issues.filter((i) => i.severity === "warning");
      if (warnings.length)
        options.log?.warn(`pod ${podKey(pod)} from ${describeOrigin(pod)}: ${warnings.map(formatIssue).join("; ")}`);
    }
    return result.errors;
  };

  const reject = (source: SourceName, pod: Pod, issues: FieldIssue[]): RejectedPod => ({
    source,
    origin: pod.metadata.annotations[ANNOTATION.origin] ?? source,
    ...(pod.metadata.annotations[ANNOTATION.document] !== undefined
      ? { document: Number(pod.metadata.annotations[ANNOTATION.document]) }
      : {}),
    pod: podKey(pod),
    issues,
  });

  /** Valid, unique, unclaimed pods of one merge, and what was dropped on the way. */
  const admit = (source: SourceName, incoming: Pod[]) => {
    const accepted = new Map<string, Pod>();
    const dropped: RejectedPod[] = [];
    const invalid: RejectedPod[] = [];
    for (const pod of incoming) {
      const key = keyOf(pod);
      const errors = errorsOf(pod);
      if (errors.length) {
        const rejection = reject(source, pod, errors);
        dropped.push(rejection);
        invalid.push(rejection);
        continue;
      }
      const first = accepted.get(key);
      if (first) {
        dropped.push(
          reject(source, pod, [
            {
              path: "metadata.name",
              type: "Duplicate value",
              value: pod.metadata.name,
              detail: `pod ${key} is already defined in ${describeOrigin(first)}; the first one wins`,
              severity: "error",
            },
          ]),
        );
        continue;
      }
      const claimedBy = owner.get(key);
      if (claimedBy && claimedBy !== source && pods.get(claimedBy)?.has(key)) {
        dropped.push(
          reject(source, pod, [
            {
              path: "metadata.name",
              type: "Duplicate value",
              value: pod.metadata.name,
              detail: `pod ${key} already comes from the ${claimedBy} source, which keeps it`,
              severity: "error",
            },
          ]),
        );
        continue;
      }
      accepted.set(key, pod);
    }
    return { accepted, dropped, invalid };
  };

  /**
   * The stored pods an invalid edit keeps, by rejection: the pod of the same name, or the one read from the same
   * document of the same origin (a file, URL or etcd key; every document of it when the whole origin failed),
   * since an edit may have broken the name or kind that names it. A rename is a new pod only when valid.
   */
  const keptPods = (current: Map<string, Pod>, accepted: Map<string, Pod>, failed: RejectedPod[]) => {
    // The stored pods by origin and by origin and document, built once per merge (10,000 pods, as many rejections).
    const byOrigin = new Map<string, Pod[]>();
    for (const pod of current.values()) {
      const { [ANNOTATION.origin]: origin, [ANNOTATION.document]: document } = pod.metadata.annotations;
      for (const slot of [`${origin}`, `${origin}\0${document}`]) {
        const list = byOrigin.get(slot);
        if (list) list.push(pod);
        else byOrigin.set(slot, [pod]);
      }
    }
    const kept = new Map<RejectedPod, Pod[]>();
    for (const r of failed) {
      const named = !r.kind && r.pod !== undefined ? current.get(r.pod) : undefined;
      const read = byOrigin.get(r.document === undefined ? r.origin : `${r.origin}\0${r.document}`) ?? [];
      const pods: Pod[] = [];
      const resent: Pod[] = [];
      for (const pod of named && !read.includes(named) ? [named, ...read] : read) {
        const now = accepted.get(keyOf(pod));
        if (!now) pods.push(pod);
        else if (hashOf(now) === hashOf(pod)) resent.push(pod);
      }
      if (pods.length) kept.set(r, pods);
      // The source kept them itself (a document that does not parse: last-good.ts): say whose version stays.
      else if (resent.length && r.issues.some((i) => i.detail?.includes(KEEPING))) keptBy.set(r, resent);
    }
    return kept;
  };

  /** The rejection, saying which last good version keeps running (on its last error). */
  const sayingKept = (r: RejectedPod, pods: Pod[]): RejectedPod => {
    const last = r.issues.findLastIndex((i) => i.severity === "error");
    const note = `${KEEPING} of pod ${pods.map(podKey).join(", ")} running`;
    const said: RejectedPod = {
      ...r,
      issues: r.issues.map((i, n) => (n === last ? { ...i, detail: i.detail ? `${i.detail}; ${note}` : note } : i)),
    };
    keptBy.set(said, pods);
    return said;
  };

  let refusalsVersion = 0;
  /** Where a rejection came from, as the log and the events name it: origin[document]. */
  const whereFrom = (r: RejectedPod) => `${r.origin}${r.document !== undefined ? `[${r.document}]` : ""}`;
  const errorsSaid = (r: RejectedPod) =>
    r.issues
      .filter((i) => i.severity === "error")
      .map(formatIssue)
      .join("; ");

  const report = (source: SourceName, standing: RejectedPod[]) => {
    problems.set(source, standing);
    const before = logged.get(source) ?? new Set<string>();
    const now = new Set<string>();
    if (standing.length || before.size) refusalsVersion++;
    for (const r of standing) {
      const signature = `${r.origin}|${r.pod ?? r.document}|${r.issues.map(formatIssue).join(";")}`;
      now.add(signature);
      if (before.has(signature)) continue;
      options.metrics?.sourceError(source);
      const errors = errorsSaid(r);
      const kept = keptBy.get(r);
      const what = r.pod ? `${r.kind ?? "pod"} ${r.pod}` : `document ${r.document ?? 0}`;
      options.log?.warn(
        kept
          ? `refusing the edit of ${what} from ${source} ${whereFrom(r)}: ${errors}`
          : `dropping ${what} from ${source} ${r.origin}: ${errors}`,
        { source, origin: r.origin },
      );
      const [namespace, name] = (r.kind ? "" : (r.pod ?? "")).split("/");
      const about = kept?.[0] ?? (namespace && name ? { metadata: { namespace, name, uid: "" } } : undefined);
      if (about) options.onRejected?.(about, `${whereFrom(r)}: ${errors}`);
    }
    logged.set(source, now);
  };

  const merge = (source: SourceName, op: PodOperation, read: Pod[], parseRejected: RejectedPod[] = []) => {
    const incoming = options.identify ? read.map(options.identify) : read;
    if (!order.includes(source)) order.push(source);
    let current = pods.get(source);
    if (!current) pods.set(source, (current = new Map()));
    const added: Pod[] = [];
    const updated: Pod[] = [];
    const removed: Pod[] = [];

    if (op === "REMOVE") {
      for (const pod of incoming) {
        const key = podKey(pod);
        const stored = current.get(key);
        if (!stored) continue;
        current.delete(key);
        owner.delete(key);
        removed.push(stored);
      }
      report(
        source,
        (problems.get(source) ?? []).filter((r) => !incoming.some((p) => podKey(p) === r.pod)),
      );
    } else {
      const { accepted, dropped, invalid } = admit(source, incoming);
      // An invalid edit keeps the last good version running (the Go "invalid UPDATE keeps foo"), whatever it broke.
      const failed = parseRejected.length || invalid.length ? [...parseRejected, ...invalid] : [];
      const kept = failed.length ? keptPods(current, accepted, failed) : new Map<RejectedPod, Pod[]>();
      // A SET with nothing kept is the accepted pods in their order: that map becomes the source's (10,000 pods
      // with one change: one map of them built per SET, not two). Else the kept ones go first, as before.
      const next = op === "SET" && !kept.size ? accepted : op === "SET" ? new Map<string, Pod>() : new Map(current);
      if (op === "SET") for (const pods of kept.values()) for (const pod of pods) next.set(keyOf(pod), pod);
      for (const [key, pod] of accepted) {
        const stored = current.get(key);
        const same = stored !== undefined && (stored === pod || hashOf(stored) === hashOf(pod));
        if (!stored) added.push(pod);
        else if (!same) updated.push(pod);
        if (next !== accepted || (same && stored !== pod)) next.set(key, same ? stored : pod);
      }
      // Every key of `next` is an added one or one of `current`: when the counts say all of `current` stayed, none went.
      if (op === "SET" && next.size - added.length < current.size)
        for (const [key, pod] of current) if (!next.has(key)) removed.push(pod);
      pods.set(source, next);
      for (const pod of removed) owner.delete(podKey(pod));
      for (const key of next.keys()) if (owner.get(key) !== source) owner.set(key, source);
      const said = (r: RejectedPod) => {
        const pods = kept.get(r);
        return pods ? sayingKept(r, pods) : r;
      };
      const fresh = kept.size ? [...parseRejected.map(said), ...dropped.map(said)] : [...parseRejected, ...dropped];
      const standing =
        op === "SET"
          ? fresh
          : [...(problems.get(source) ?? []).filter((r) => !incoming.some((p) => podKey(p) === r.pod)), ...fresh];
      report(source, standing);
    }
    forgetOldVersions(source, op === "REMOVE" ? [] : incoming);

    if (!seen.has(source)) {
      seen.add(source);
      if (options.sources.every((s) => seen.has(s))) markReady();
    }
    if (mode === "Incremental") {
      if (removed.length) emit({ op: "REMOVE", pods: removed, source });
      if (added.length) emit({ op: "ADD", pods: added, source });
      if (updated.length) emit({ op: "UPDATE", pods: updated, source });
    } else if (mode === "SnapshotAndUpdates") {
      if (updated.length) emit({ op: "UPDATE", pods: updated, source });
      if (added.length || removed.length) emit({ op: "SET", pods: mergedState(), source: "*" });
    } else if (added.length || removed.length || updated.length) {
      emit({ op: "SET", pods: mergedState(), source: "*" });
    }
  };

  return {
    merge,
    apply: (source, snapshot) => {
      if (!order.includes(source)) order.push(source);
      // A source that cannot be read keeps its pods: nothing is started or stopped on its account.
      if (snapshot.notReady !== undefined) return void notReady.set(source, snapshot.notReady);
      notReady.delete(source);
      configStore.merge(source, "SET", snapshot.configs ?? []);
      merge(source, "SET", snapshot.pods, snapshot.rejected);
    },
    mergeConfigs: (source, op, objects) => {
      if (!order.includes(source)) order.push(source);
      configStore.merge(source, op, objects);
    },
    configs: configStore,
    subscribeConfigs: configStore.subscribe,
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    sync: () => emit({ op: "SET", pods: mergedState(), source: "*" }),
    mergedState,
    allSourcesReady: () => notReady.size === 0 && options.sources.every((s) => seen.has(s)),
    sourcesNotReady: () =>
      order.flatMap((source) => {
        const reason =
          notReady.get(source) ?? (options.sources.includes(source) && !seen.has(source) ? "not read yet" : undefined);
        return reason === undefined ? [] : [{ source, reason }];
      }),
    whenAllSourcesReady: () => ready,
    rejected: () => [...order.flatMap((source) => problems.get(source) ?? []), ...configStore.rejected()],
    refusedEdits: () => {
      const refused = new Map<string, string>();
      for (const source of order)
        for (const r of problems.get(source) ?? [])
          for (const pod of keptBy.get(r) ?? []) refused.set(podKey(pod), `${whereFrom(r)}: ${errorsSaid(r)}`);
      return refused;
    },
    refusedEditsVersion: () => refusalsVersion,
  };
}

// Pods are immutable once parsed, so their key can be computed once (fewer strings per merge).
const keys = new WeakMap<Pod, string>();
function keyOf(pod: Pod): string {
  let key = keys.get(pod);
  if (key === undefined) keys.set(pod, (key = podKey(pod)));
  return key;
}

function hashOf(pod: Pod): string {
  return pod.metadata.annotations[ANNOTATION.hash] ?? podSpecHash(pod);
}

function describeOrigin(pod: Pod): string {
  const origin = pod.metadata.annotations[ANNOTATION.origin];
  const document = pod.metadata.annotations[ANNOTATION.document];
  return origin
    ? `${origin}${document !== undefined ? `[${document}]` : ""}`
    : (pod.metadata.annotations[ANNOTATION.source] ?? "unknown source");
}
