// The pods' watch cache (k8s.io/apiserver's watchCache, for one node): each pod as /pods gives it with a
// resourceVersion that changes when the pod does, a bounded history of ADDED/MODIFIED/DELETED events for watches
// that resume from a version, and the watchers fed from it. With no watcher the kubelet's change notifications
// cost nothing (no idle cost); a list or a new watch compares the feed's version and catches up.
import type { Clock } from "../../clock.ts";
import { podKey, type Pod } from "../../api/types.ts";

/** A watch.Event as the API streams it. */
export interface WatchEvent {
  type: "ADDED" | "MODIFIED" | "DELETED";
  object: Pod;
  /** The object before a MODIFIED or DELETED (a filtered watch turns MODIFIED into ADDED or DELETED with it; a
   *  list at an older revision undoes the event with it). */
  previous?: Pod;
  revision: number;
}

/** Where the pods come from: /pods' list, a number that changes whenever it would answer differently, and a
 *  notification of such changes. */
export interface PodFeed {
  pods(): Pod[];
  version(): number;
  onChange(listener: () => void): () => void;
  /**
   * The version is a store's revision (etcd's), the same for every server reading that store: pods are stamped with
   * the version they changed at instead of the cache's own counter, so a resourceVersion from one server resumes a
   * watch on another (fleet serve behind a load balancer). Unset: the cache counts from the clock.
   */
  revisioned?: boolean;
  /**
   * The feed never edits a pod object it gave: a changed pod is a new object. The cache then takes the same object
   * as the same pod without comparing its JSON (a 30,000-pod fleet's list after one change, bench/results.md).
   */
  immutable?: boolean;
}

export interface PodCacheOptions {
  /** Events kept for watches that resume from a resourceVersion (default 1000; older ones get 410 Expired). */
  historySize?: number;
}

/** What a watch started from a resourceVersion gets first. */
export type WatchStart =
  | { kind: "events"; events: WatchEvent[] }
  | { kind: "expired"; message: string }
  | { kind: "too-large"; message: string };

export interface PodCache {
  /** The pods now (each with metadata.resourceVersion) and the list's resourceVersion. */
  list(): { revision: number; pods: Pod[] };
  /** The pods as they were at `revision` (a continued list's snapshot), or undefined when its events are gone. */
  listAt(revision: number): Pod[] | undefined;
  /** The pod now, if the kubelet has it. */
  get(namespace: string, name: string): Pod | undefined;
  /**
   * A watcher fed every event after `from` (undefined: from now, after `initial` ADDED events of every pod);
   * the events between `from` and now come first. Returns the start and the stop function.
   */
  watch(from: number | undefined, listener: (event: WatchEvent) => void): { start: WatchStart; stop(): void };
  /** The newest resourceVersion. */
  revision(): number;
  /** How many watchers are open (the bench and the tests read it). */
  watchers(): number;
  /** Stops listening to the feed. */
  close(): void;
}

/**
 * The pod as served: its resourceVersion, and a creationTimestamp (the time the kubelet first had it, as the API
 * server stamps one at creation) when its manifest gives none. A copy; the feed's objects are never changed.
 */
function versioned(pod: Pod, revision: number, created: string): Pod {
  return {
    ...pod,
    metadata: {
      ...pod.metadata,
      creationTimestamp: pod.metadata.creationTimestamp ?? created,
      resourceVersion: String(revision),
    },
  };
}

/** metav1.Time's form: seconds, UTC. */
const rfc3339 = (ms: number) => new Date(ms).toISOString().replace(/\.\d+Z$/, "Z");

export function createPodCache(feed: PodFeed, deps: { clock: Clock }, options: PodCacheOptions = {}): PodCache {
  const historySize = options.historySize ?? 1000;
  // Versions start at the clock's milliseconds, so a restarted kubelet never reuses one a client still holds:
  // a watch resumed from before the restart is older than anything kept, and gets 410 Expired.
  let revision = feed.revisioned ? feed.version() : deps.clock.now();
  /** The revision the next change is stamped with. */
  const next = () => (feed.revisioned ? (revision = Math.max(revision, feed.version())) : ++revision);
  /** Events at or before this revision are no longer kept. */
  let compacted = revision;
  /** `from`: the feed's object the entry was made from. */
  const entries = new Map<string, { pod: Pod; signature: string; from: Pod }>();
  const history: WatchEvent[] = [];
  const listeners = new Set<(event: WatchEvent) => void>();
  let seenVersion: number | undefined;
  let scheduled = false;

  const record = (event: WatchEvent) => {
    history.push(event);
    if (history.length > historySize) compacted = history.shift()!.revision;
    for (const listener of listeners) listener(event);
  };

  /** Brings the entries up to date with the feed, recording an event per change. */
  const refresh = () => {
    const version = feed.version();
    if (version === seenVersion) return;
    seenVersion = version;
    const seen = new Set<string>();
    // A key the feed gives twice (a pod still stopping and its successor of the same name): the last one wins.
    const current = new Map(feed.pods().map((pod) => [podKey(pod), pod]));
    for (const [key, pod] of current) {
      seen.add(key);
      const entry = entries.get(key);
      if (feed.immutable && entry?.from === pod) continue;
      const signature = JSON.stringify(pod);
      if (entry?.signature === signature) {
        entry.from = pod;
        continue;
      }
      const created = entry?.pod.metadata.creationTimestamp ?? rfc3339(deps.clock.now());
      const object = versioned(pod, next(), String(created));
      entries.set(key, { pod: object, signature, from: pod });
      record(entry ? { type: "MODIFIED", object, previous: entry.pod, revision } : { type: "ADDED", object, revision });
    }
    for (const [key, entry] of entries) {
      if (seen.has(key)) continue;
      entries.delete(key);
      const object = { ...entry.pod, metadata: { ...entry.pod.metadata, resourceVersion: String(next()) } };
      record({ type: "DELETED", object, previous: entry.pod, revision });
    }
  };

  const stopFeed = feed.onChange(() => {
    // Only open watches need the change now; a list compares versions when it is asked.
    if (listeners.size === 0 || scheduled) return;
    scheduled = true;
    queueMicrotask(() => {
      scheduled = false;
      if (listeners.size > 0) refresh();
    });
  });

  return {
    list() {
      refresh();
      return { revision, pods: [...entries.values()].map((e) => e.pod) };
    },
    listAt(at) {
      refresh();
      if (at < compacted || at > revision) return undefined;
      // Now, with every later event undone, newest first: the history holds each event after `compacted`.
      const pods = new Map([...entries].map(([key, e]) => [key, e.pod]));
      for (let i = history.length - 1; i >= 0 && history[i]!.revision > at; i--) {
        const event = history[i]!;
        if (event.type === "ADDED") pods.delete(podKey(event.object));
        else pods.set(podKey(event.object), event.previous!);
      }
      return [...pods.values()];
    },
    get(namespace, name) {
      refresh();
      return entries.get(`${namespace}/${name}`)?.pod;
    },
    watch(from, listener) {
      refresh();
      let start: WatchStart;
      if (from === undefined) {
        start = {
          kind: "events",
          events: [...entries.values()].map((e) => ({ type: "ADDED", object: e.pod, revision })),
        };
      } else if (from < compacted) {
        start = { kind: "expired", message: `too old resource version: ${from} (${compacted + 1})` };
      } else if (from > revision) {
        start = { kind: "too-large", message: `Too large resource version: ${from}, current: ${revision}` };
      } else {
        start = { kind: "events", events: history.filter((e) => e.revision > from) };
      }
      if (start.kind !== "events") return { start, stop() {} };
      listeners.add(listener);
      return { start, stop: () => void listeners.delete(listener) };
    },
    revision: () => {
      refresh();
      return revision;
    },
    watchers: () => listeners.size,
    close: stopFeed,
  };
}
