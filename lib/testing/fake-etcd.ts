// An in-memory etcd for the fleet reporter's and fleet apply's unit tests: keys with the revision of
// their last write, leases that expire by hand, a revision per write, compare-and-swap, and an outage
// switch. Passes the same contract suite as the real client.
import { KubeletError } from "../api/types.ts";
import type { FleetStore } from "../node/status/fleet-reporter.ts";
import type { EtcdWatch, EtcdWatchHandlers } from "../sources/etcd-client.ts";

export class FakeEtcd implements FleetStore {
  readonly data = new Map<string, { value: string; lease: string; modRevision: number }>();
  readonly leases = new Set<string>();
  /** Bumped once per put/delete or transaction, as etcd's revision is. */
  revision = 1;
  keepAlives = 0;
  /** While true every call fails as an unreachable cluster does. */
  down = false;
  #nextLease = 100;

  #reachable(): void {
    if (this.down) throw new Error("14 UNAVAILABLE: No connection established");
  }

  /** Expires a lease with every key on it, as etcd does when its TTL runs out. */
  expire(lease: string): void {
    this.leases.delete(lease);
    this.revision++;
    for (const [key, entry] of this.data)
      if (entry.lease === lease) {
        this.data.delete(key);
        this.#notify(key);
      }
  }

  /** Values under a prefix, parsed. */
  values(prefix: string): Map<string, any> {
    return new Map([...this.data].filter(([k]) => k.startsWith(prefix)).map(([k, v]) => [k, JSON.parse(v.value)]));
  }

  async list(prefix: string, _options?: { serializable?: boolean }) {
    this.#reachable();
    const entries = [...this.data.keys()]
      .filter((k) => k.startsWith(prefix))
      .sort()
      .map((key) => ({ key, ...this.data.get(key)! }));
    return { entries, revision: this.revision };
  }

  /** Watchers of a prefix, told of every later put and delete under it (fleet serve's feeds). */
  readonly #watchers = new Set<{ prefix: string; handlers: EtcdWatchHandlers }>();

  /** Every change since the last compaction, so a watch from a past revision is replayed as etcd replays it. */
  readonly #history: Array<{
    key: string;
    revision: number;
    stored?: { value: string; lease: string; modRevision: number };
  }> = [];
  /** Revisions at or below this are compacted: a watch from one is refused, as etcd refuses it. */
  compacted = 0;

  /** Drops the history up to `revision`, as `etcdctl compact` does. */
  compact(revision: number): void {
    this.compacted = revision;
    while (this.#history.length && this.#history[0]!.revision <= revision) this.#history.shift();
  }

  async watch(target: { prefix: string }, startRevision: number, handlers: EtcdWatchHandlers): Promise<EtcdWatch> {
    this.#reachable();
    if (startRevision > 0 && startRevision <= this.compacted)
      throw new Error("etcdserver: mvcc: required revision has been compacted");
    for (const { key, revision, stored } of this.#history)
      if (revision >= startRevision && key.startsWith(target.prefix))
        stored ? handlers.put({ key, ...stored }) : handlers.delete(key);
    const watcher = { prefix: target.prefix, handlers };
    this.#watchers.add(watcher);
    return { done: new Promise<void>(() => {}), cancel: async () => void this.#watchers.delete(watcher) };
  }

  #notify(key: string): void {
    const stored = this.data.get(key);
    this.#history.push({ key, revision: this.revision, stored: stored && { ...stored } });
    for (const { prefix, handlers } of this.#watchers)
      if (key.startsWith(prefix)) stored ? handlers.put({ key, ...stored }) : handlers.delete(key);
  }

  async leaseTimeToLive(lease: string) {
    this.#reachable();
    return this.leases.has(lease) ? { ttl: 40, granted: 40 } : undefined;
  }

  async get(key: string) {
    this.#reachable();
    const stored = this.data.get(key);
    return { entry: stored && { key, ...stored }, revision: this.revision };
  }

  async apply(changes: Array<{ key: string; value?: string }>, lease?: string) {
    this.#reachable();
    if (lease && !this.leases.has(lease)) throw new KubeletError("LeaseNotFound", `etcd lease ${lease} has expired`);
    this.revision++;
    for (const { key, value } of changes) {
      if (value === undefined) this.data.delete(key);
      else this.data.set(key, { value, lease: lease ?? "0", modRevision: this.revision });
      this.#notify(key);
    }
  }

  async applyIf(
    expected: Array<{ key: string; modRevision: number }>,
    changes: Array<{ key: string; value?: string }>,
  ) {
    this.#reachable();
    if (expected.some(({ key, modRevision }) => (this.data.get(key)?.modRevision ?? 0) !== modRevision)) return false;
    await this.apply(changes);
    return true;
  }

  async grantLease(_ttlSeconds: number) {
    this.#reachable();
    const id = String(this.#nextLease++);
    this.leases.add(id);
    return id;
  }

  async keepAlive(lease: string) {
    this.#reachable();
    this.keepAlives++;
    if (!this.leases.has(lease)) throw new KubeletError("LeaseNotFound", `etcd lease ${lease} has expired`);
    return 40;
  }

  async revokeLease(lease: string) {
    this.#reachable();
    this.expire(lease);
  }
}
