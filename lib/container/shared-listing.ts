// The runtime's last full listing of sandboxes and containers (the PLEG's relist's, or a reader's), kept so the other
// readers of the node (the resync, container GC, the log manager, the stats collection) are answered from it while
// nothing can have changed since it began, as upstream's resync reads the PLEG's pod cache instead of listing again.
import type { Clock } from "../clock.ts";
import type { ContainerSummary, PodSandboxSummary, Runtime } from "./runtime.ts";

/**
 * How old a listing each reader takes where no event stream keeps it current (the relist's, 1 s apart). The resync and
 * container GC take upstream's runtime cache's (kubelet.go runtimeCacheRefreshPeriod: housekeeping's 2 s + 1 s), which
 * feeds its HandlePodCleanups; the stats collection and the log manager run every 10 s and take a listing of that age.
 */
export const RESYNC_LISTING_MAX_AGE_MS = 3_000;
export const GC_LISTING_MAX_AGE_MS = 3_000;
export const STATS_LISTING_MAX_AGE_MS = 10_000;
export const LOG_LISTING_MAX_AGE_MS = 10_000;

/** When a list began and what could have made it stale: the token a recorded half carries. */
export interface ListingToken {
  /** The change count when the list began: any change since (the kubelet's, the stream's) makes it stale. */
  changes: number;
  /** No change of the kubelet's was under way when it began (one under way may land on either side of the list). */
  settled: boolean;
  /** The event stream was open when it began: while it stays open, the listing is current whatever its age. */
  streamed: boolean;
  /** ms, the clock's. */
  at: number;
}

interface Half<T> {
  token: ListingToken;
  /** Made on first read: a relist nobody reads maps nothing. */
  items: () => T[];
}

export interface SharedListing {
  /** A list is about to begin: its token. */
  begin(): ListingToken;
  /** A full, unfiltered list that began at `token`; `items` maps it when first read. */
  recordSandboxes(token: ListingToken, items: () => PodSandboxSummary[]): void;
  recordContainers(token: ListingToken, items: () => ContainerSummary[]): void;
  /** Runs a call that changes the runtime (create, start, stop, remove): no listing begun before it ends is current. */
  changing<T>(call: () => Promise<T>): Promise<T>;
  /** The event stream told of a change. */
  changed(): void;
  /** The event stream opened or closed; a close makes every listing stale (what it would have told is unknown). */
  streaming(open: boolean): void;
  /** The halves current for a reader that takes a listing `maxAgeMs` old where no stream keeps it current. */
  current(maxAgeMs: number): { sandboxes?: PodSandboxSummary[]; containers?: ContainerSummary[] };
}

/** Maps once: the same list answers every reader until the next is recorded. */
const once = <T>(make: () => T[]): (() => T[]) => {
  let made: T[] | undefined;
  return () => (made ??= make());
};

export function createSharedListing(
  clock: Clock,
  options: {
    /**
     * The oldest a listing may be while the stream is open: for a stream that does not tell of every change a
     * listing shows (Docker's: a rename, an image retagged, a removal that fails), and so that a reader still
     * lists, as upstream's Evented PLEG relists, at this period. Default: no bound.
     */
    streamedMaxAgeMs?: number;
  } = {},
): SharedListing {
  const streamedMaxAgeMs = options.streamedMaxAgeMs ?? Number.POSITIVE_INFINITY;
  let changes = 0;
  let underWay = 0;
  let open = false;
  let sandboxes: Half<PodSandboxSummary> | undefined;
  let containers: Half<ContainerSummary> | undefined;

  const fresh = <T>(half: Half<T> | undefined, maxAgeMs: number): T[] | undefined => {
    if (!half) return undefined;
    const { token } = half;
    if (!token.settled || token.changes !== changes) return undefined;
    if (clock.now() - token.at > (token.streamed && open ? streamedMaxAgeMs : maxAgeMs)) return undefined;
    return half.items();
  };
  /** A newer list replaces an older one only: two lists may end in either order. */
  const newer = <T>(half: Half<T> | undefined, token: ListingToken) =>
    !half || token.changes > half.token.changes || (token.changes === half.token.changes && token.at >= half.token.at);

  return {
    begin: () => ({ changes, settled: underWay === 0, streamed: open, at: clock.now() }),
    recordSandboxes(token, items) {
      if (newer(sandboxes, token)) sandboxes = { token, items: once(items) };
    },
    recordContainers(token, items) {
      if (newer(containers, token)) containers = { token, items: once(items) };
    },
    async changing(call) {
      changes++;
      underWay++;
      try {
        return await call();
      } finally {
        underWay--;
        changes++;
      }
    },
    changed() {
      changes++;
    },
    streaming(now) {
      if (open && !now) changes++;
      open = now;
    },
    current(maxAgeMs) {
      const s = fresh(sandboxes, maxAgeMs);
      const c = fresh(containers, maxAgeMs);
      return { ...(s && { sandboxes: s }), ...(c && { containers: c }) };
    },
  };
}

/** Every kubelet container: the runtime's last listing when current for a reader of `maxAgeMs`, else a list. */
export async function listedContainers(
  runtime: Pick<Runtime, "listContainers" | "lastListing">,
  maxAgeMs: number,
): Promise<ContainerSummary[]> {
  return runtime.lastListing?.(maxAgeMs).containers ?? (await runtime.listContainers());
}

/** Every kubelet sandbox (or those in `state`): the last listing when current for a reader of `maxAgeMs`, else a list. */
export async function listedSandboxes(
  runtime: Pick<Runtime, "listPodSandboxes" | "lastListing">,
  maxAgeMs: number,
  state?: PodSandboxSummary["state"],
): Promise<PodSandboxSummary[]> {
  const kept = runtime.lastListing?.(maxAgeMs).sandboxes;
  if (kept) return state ? kept.filter((s) => s.state === state) : kept;
  return runtime.listPodSandboxes(state ? { state } : {});
}
