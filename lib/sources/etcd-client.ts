// The only etcd3 import: a narrow etcd client (get, list, put on a lease, delete, leases, watch) shared
// by the etcd source, the fleet reporter and `kubelet fleet`. It takes plain settings; --etcd_config is
// read by lib/config/etcd-config.ts.
//
// Decisions: TLS uses gRPC's certificate-provider credentials over the certificate files, re-read every
// 10 s (etcd-certificates.ts): a rotated certificate is used by the next connection, and the open
// ones (with their watches and their revision) are kept. The server's certificate is checked against the
// endpoint's IP or name (patches/@grpc+grpc-js: no TLS server name for an IP, which Bun and Deno refuse).
// etcd's refusals become KubeletErrors that name the keys and the user (etcd-errors.ts).
import { Etcd3, type IOptions } from "etcd3";
import { KubeletError } from "../api/types.ts";
import { loadGrpc } from "../grpc.ts";
import { certificateMismatch, type EtcdTlsFiles, watchCertificateFiles } from "./etcd-certificates.ts";
import { etcdRefusal, explain, keyList, staleToken } from "./etcd-errors.ts";

/** One key as etcd stores it. */
export interface EtcdEntry {
  key: string;
  value: string;
  /** Id of the lease the key is attached to; "0" when none. */
  lease: string;
  /** Revision of the key's last write. */
  modRevision: number;
}

/** A watch in progress: `done` settles when it ends (resolves) or fails (rejects). */
export interface EtcdWatch {
  done: Promise<void>;
  cancel(): Promise<void>;
}

export interface EtcdWatchHandlers {
  put(entry: EtcdEntry): void;
  delete(key: string): void;
  disconnected?(): void;
  /** The watch is (again) in place, from `revision` on: after a lost connection, where it left off. */
  connected?(revision: number): void;
}

/** What the kubelet asks of etcd. Errors are etcd3's; "LeaseNotFound" when a lease has expired. */
export interface EtcdClient {
  get(key: string): Promise<{ entry?: EtcdEntry; revision: number }>;
  /** `serializable`: answered by the member asked, without a round through the leader (may lag it by a moment). */
  list(prefix: string, options?: { serializable?: boolean }): Promise<{ entries: EtcdEntry[]; revision: number }>;
  /**
   * Every key under each prefix, at one revision: `entries[i]` holds prefix i's keys, in key order. Many prefixes go
   * in one read-only transaction (one round trip for LISTS_PER_TXN of them), not one range call each. Revision 0 for no prefixes.
   */
  listEach(
    prefixes: string[],
    options?: { serializable?: boolean },
  ): Promise<{ entries: EtcdEntry[][]; revision: number }>;
  put(key: string, value: string, lease?: string): Promise<void>;
  delete(key: string): Promise<void>;
  /**
   * Puts (`value` set, on `lease`) and deletes (`value` undefined) in transactions of at most 100 operations:
   * a batch of changes costs etcd one revision. Throws "LeaseNotFound" when the lease has expired.
   */
  apply(changes: Array<{ key: string; value?: string }>, lease?: string): Promise<void>;
  /**
   * Puts and deletes as one transaction, made only while each `expected` key is still at its modRevision (0: the key
   * does not exist): compare-and-swap over several keys. Resolves false, writing nothing, when one has moved on.
   */
  applyIf(
    expected: Array<{ key: string; modRevision: number }>,
    changes: Array<{ key: string; value?: string }>,
  ): Promise<boolean>;
  /** Grants a lease of `ttlSeconds` and returns its id. */
  grantLease(ttlSeconds: number): Promise<string>;
  /** Renews the lease; resolves to its TTL. Throws a KubeletError "LeaseNotFound" when etcd no longer has it. */
  keepAlive(lease: string): Promise<number>;
  /** Seconds left and granted, or undefined when the lease is gone. */
  leaseTimeToLive(lease: string): Promise<{ ttl: number; granted: number } | undefined>;
  revokeLease(lease: string): Promise<void>;
  /** Watches a key, or every key under a prefix, from `startRevision`. */
  watch(
    target: { key: string } | { prefix: string },
    startRevision: number,
    handlers: EtcdWatchHandlers,
  ): Promise<EtcdWatch>;
  close(): void;
}

/** Connection settings (the composition root reads them from --etcd_servers or --etcd_config). */
export interface EtcdClientOptions {
  /** Client URLs of the members (http://ip:port or https://…). */
  endpoints: string[];
  /** How long to wait for a connection, ms (default 5 s). */
  dialTimeoutMs?: number;
  /** PEM files: the CA to trust, and a client certificate and key to present (both or neither). */
  tls?: EtcdTlsFiles;
  auth?: { username: string; password: string };
}

/** Keys per page of a list: 500 statuses or events stay far below gRPC's 4 MB message limit. */
const LIST_PAGE = 500;

/**
 * Prefixes ranged in one transaction by listEach (below etcd's --max-txn-ops, 128), each to LIST_EACH_PAGE keys (a
 * prefix with more is read on in pages): an answer holds at most 3,000 keys, ~3 MB of pod statuses.
 */
const LISTS_PER_TXN = 30;
const LIST_EACH_PAGE = 100;

/**
 * gRPC's default 4 MB limit on an answer is raised for listEach's transactions: 3,000 keys of 20 kB values fit. Not
 * caught and retried smaller: etcd3 counts a too-large answer as a failed member, retries it and opens its circuit.
 */
const MAX_ANSWER_BYTES = 64 * 2 ** 20;

/** Transactions of listEach in flight at once. */
const LIST_TXNS_IN_FLIGHT = 4;

/** The end of the key range holding every key that starts with `prefix`. */
function prefixEnd(prefix: string): Buffer {
  const end = Buffer.from(prefix);
  for (let i = end.length - 1; i >= 0; i--) {
    if (end[i]! < 0xff) {
      end[i]!++;
      return end.subarray(0, i + 1);
    }
  }
  return Buffer.from([0]);
}

/** etcd's default --max-txn-ops is 128. */
const TXN_OPS = 100;

/** How often the certificate files are read again: a rotation reaches new connections within this. */
const CERT_RELOAD_MS = 10_000;

/** Calls to a member that does not answer fail after this, so a lost cluster is noticed and retried. */
const CALL_TIMEOUT_MS = 5000;

export function createEtcdClient(options: EtcdClientOptions): EtcdClient {
  if (options.endpoints.length === 0) throw new KubeletError("InvalidValue", "etcd needs at least one endpoint");
  // Created on first use: the TLS credentials come from the lazily loaded gRPC module.
  let etcd: Promise<Etcd3> | undefined;
  const files = options.tls ? watchCertificateFiles(options.tls, CERT_RELOAD_MS) : undefined;
  const connect = () =>
    (etcd ??= (async () => {
      const grpc = await loadGrpc();
      const credentials = files
        ? grpc.experimental.createCertificateProviderChannelCredentials(files.provider, files.identity, {
            checkServerIdentity: (host, cert) => certificateMismatch(host, cert, options.endpoints),
          })
        : undefined;
      return new Etcd3({
        hosts: options.endpoints,
        dialTimeout: options.dialTimeoutMs ?? 5000,
        grpcOptions: { "grpc.max_receive_message_length": MAX_ANSWER_BYTES },
        ...(credentials ? { credentials: credentials as unknown as IOptions["credentials"] } : {}),
        ...(options.auth ? { auth: options.auth } : {}),
      } satisfies IOptions);
    })());
  /** Drops the etcd3 client for a new one (closing the old): its next call logs in afresh. */
  const reconnect = () => {
    const old = etcd;
    etcd = undefined;
    void old?.then((client) => client.close());
  };
  const refused = etcdRefusal(options);
  const deadline = () => ({ deadline: new Date(Date.now() + CALL_TIMEOUT_MS) });
  const entry = (kv: { key: Buffer; value: Buffer; lease: string; mod_revision: string }): EtcdEntry => ({
    key: kv.key.toString("utf8"),
    value: kv.value.toString("utf8"),
    lease: String(kv.lease ?? "0"),
    modRevision: Number(kv.mod_revision),
  });
  /** Every key under `prefix`, in pages at one revision (`at`, or the first page's). */
  const pages = async (prefix: string, serializable: boolean, at?: string) => {
    // In pages at one revision: one response for a whole fleet's keys exceeds gRPC's 4 MB message limit.
    const client = await connect();
    const entries: EtcdEntry[] = [];
    let from = Buffer.from(prefix);
    let revision = at;
    for (;;) {
      const page = await client.kv
        .range(
          {
            key: from,
            range_end: prefixEnd(prefix),
            limit: LIST_PAGE,
            serializable,
            ...(revision ? { revision } : {}),
          },
          deadline(),
        )
        .catch(refused(`reading ${prefix}…`));
      revision ??= String(page.header.revision);
      entries.push(...page.kvs.map(entry));
      if (!page.more || page.kvs.length === 0) return { entries, revision: Number(revision) };
      from = Buffer.concat([page.kvs[page.kvs.length - 1]!.key, Buffer.from([0])]);
    }
  };
  const keepAliveOnce = async (lease: string, until: { deadline: Date }): Promise<number> => {
    const renewing = `renewing lease ${lease}`;
    const stream = await (await connect()).leaseClient.leaseKeepAlive(until).catch(refused(renewing));
    try {
      const response = await new Promise<{ TTL: string }>((resolve, reject) => {
        stream.on("data", resolve);
        stream.on("error", (error) => reject(explain(error, renewing, options)));
        stream.write({ ID: lease });
      });
      const ttl = Number(response.TTL);
      if (ttl <= 0) throw new KubeletError("LeaseNotFound", `etcd lease ${lease} has expired`);
      return ttl;
    } finally {
      stream.end();
    }
  };
  return {
    async get(key) {
      const client = await connect();
      const response = await client
        .get(key)
        .options(deadline())
        .exec()
        .catch(refused(`reading ${key}`));
      const kv = response.kvs[0];
      return { entry: kv ? entry(kv) : undefined, revision: Number(response.header.revision) };
    },
    async list(prefix, { serializable = false } = {}) {
      return pages(prefix, serializable);
    },
    async listEach(prefixes, { serializable = false } = {}) {
      const client = await connect();
      const entries: EtcdEntry[][] = [];
      let revision: string | undefined;
      const batches: number[] = [];
      for (let i = 0; i < prefixes.length; i += LISTS_PER_TXN) batches.push(i);
      const txn = async (first: number) => {
        const batch = prefixes.slice(first, first + LISTS_PER_TXN);
        const response = await client.kv
          .txn(
            {
              compare: [],
              success: batch.map((prefix) => ({
                request_range: {
                  key: Buffer.from(prefix),
                  range_end: prefixEnd(prefix),
                  limit: LIST_EACH_PAGE,
                  serializable,
                  ...(revision ? { revision } : {}),
                },
              })),
              failure: [],
            },
            deadline(),
          )
          .catch(refused(`reading ${keyList(batch)}`));
        revision ??= String(response.header.revision);
        for (const [j, prefix] of batch.entries()) {
          const range = response.responses[j]!.response_range!;
          entries[first + j] = range.more
            ? (await pages(prefix, serializable, revision)).entries
            : range.kvs.map(entry);
        }
      };
      // The first alone: its revision pins the others'.
      if (batches.length > 0) await txn(batches.shift()!);
      let next = 0;
      const worker = async () => {
        for (let i = next++; i < batches.length; i = next++) await txn(batches[i]!);
      };
      await Promise.all(Array.from({ length: LIST_TXNS_IN_FLIGHT }, worker));
      return { entries, revision: Number(revision ?? 0) };
    },
    async put(key, value, lease) {
      const builder = (await connect()).put(key).value(value).options(deadline());
      await (lease ? builder.lease(lease) : builder)
        .exec()
        .catch(leaseError(lease))
        .catch(refused(`writing ${key}`));
    },
    async delete(key) {
      const client = await connect();
      await client
        .delete()
        .key(key)
        .options(deadline())
        .exec()
        .catch(refused(`deleting ${key}`));
    },
    async apply(changes, lease) {
      const client = await connect();
      for (let i = 0; i < changes.length; i += TXN_OPS) {
        const batch = changes.slice(i, i + TXN_OPS);
        await client.kv
          .txn({ compare: [], success: operations(batch, lease), failure: [] }, deadline())
          .catch(leaseError(lease))
          .catch(refused(`writing ${keyList(batch.map((c) => c.key))}`));
      }
    },
    async applyIf(expected, changes) {
      if (changes.length > TXN_OPS)
        throw new KubeletError("TooManyChanges", `${changes.length} etcd writes exceed one transaction (${TXN_OPS})`);
      const client = await connect();
      const compare = expected.map(({ key, modRevision }) => ({
        key: Buffer.from(key),
        target: "Mod" as const,
        result: "Equal" as const,
        mod_revision: String(modRevision),
      }));
      const response = await client.kv
        .txn({ compare, success: operations(changes), failure: [] }, deadline())
        .catch(refused(`writing ${keyList(changes.map((c) => c.key))}`));
      return response.succeeded;
    },
    async grantLease(ttlSeconds) {
      const client = await connect();
      const response = await client.leaseClient
        .leaseGrant({ TTL: ttlSeconds }, deadline())
        .catch(refused("granting a lease"));
      return String(response.ID);
    },
    async keepAlive(lease) {
      // etcd3 opens each keep-alive stream to a member picked at random, and one to a member that is gone fails only
      // once written (opening it counts as a success, so etcd3's circuit to that member never opens): try again at
      // once, within one call's deadline, so a dead member costs a renewal a retry, not a missed round (a 6 s lease
      // lapsed in 3 rounds that each drew it). With 10 tries per endpoint and one of two members gone, all 20 draw it
      // about once in a million renewals.
      const until = deadline();
      for (let attempt = 1; ; attempt++) {
        try {
          return await keepAliveOnce(lease, until);
        } catch (error) {
          const retry = (error as { code?: string }).code === "Unavailable" && Date.now() < until.deadline.getTime();
          if (!retry || attempt >= 10 * options.endpoints.length) throw error;
        }
      }
    },
    async leaseTimeToLive(lease) {
      const response = await (await connect()).leaseClient
        .leaseTimeToLive({ ID: lease }, deadline())
        .catch(refused(`reading lease ${lease}`));
      const ttl = Number(response.TTL);
      return ttl < 0 ? undefined : { ttl, granted: Number(response.grantedTTL) };
    },
    async revokeLease(lease) {
      await (await connect()).leaseClient
        .leaseRevoke({ ID: lease }, deadline())
        .catch(refused(`revoking lease ${lease}`));
    },
    async watch(target, startRevision, handlers) {
      const what = "key" in target ? target.key : `${target.prefix}…`;
      const create = async (from: string) => {
        const builder = (await connect()).watch();
        const scoped = "key" in target ? builder.key(target.key) : builder.prefix(target.prefix);
        return scoped
          .startRevision(from)
          .create()
          .catch(refused(`watching ${what}`));
      };
      let watcher = await create(String(startRevision));
      let cancelled = false;
      let ended = () => {};
      const done = new Promise<void>((resolve, reject) => {
        ended = resolve;
        const follow = (current: typeof watcher) => {
          current.on("put", (kv) => handlers.put(entry(kv)));
          current.on("delete", (kv) => handlers.delete(kv.key.toString("utf8")));
          current.on("disconnected", () => handlers.disconnected?.());
          current.on("connected", () => handlers.connected?.(Number(current.lastRevision())));
          current.on("end", resolve);
          current.on("error", (error) => {
            // etcd cancels a watch of a compacted revision with compact_revision set and no reason, which etcd3
            // does not pass on: said here, so a caller can tell it from a lost watch (fleet serve answers 410).
            if (/^Watcher canceled: $/.test(error.message))
              return reject(new Error(`watching ${what}: mvcc: required revision has been compacted`));
            if (cancelled || !staleToken(error)) return reject(explain(error, `watching ${what}`, options));
            // etcd forgot the login (it restarted) and refused the resumed watch: etcd3 keeps its watch stream
            // on the old token for good, so a new client logs in again and the watch goes on from where it was.
            const from = String(current.lastRevision() ?? startRevision);
            reconnect();
            create(from).then((next) => {
              watcher = next;
              follow(next);
              handlers.connected?.(Number(from));
            }, reject);
          });
        };
        follow(watcher);
      });
      return {
        done,
        cancel: () => {
          cancelled = true;
          return watcher.cancel().then(ended, ended);
        },
      };
    },
    close() {
      files?.stop();
      void etcd?.then((client) => client.close());
    },
  };
}

/** A transaction's puts (`value` set, on `lease`) and deletes (`value` undefined). */
function operations(changes: Array<{ key: string; value?: string }>, lease?: string) {
  return changes.map(({ key, value }) =>
    value === undefined
      ? { request_delete_range: { key: Buffer.from(key) } }
      : { request_put: { key: Buffer.from(key), value: Buffer.from(value), lease: lease ?? "0" } },
  );
}

/** etcd's "requested lease not found" as the KubeletError callers check by code. */
function leaseError(lease: string | undefined) {
  return (error: Error): never => {
    if (/lease not found/.test(error.message))
      throw new KubeletError("LeaseNotFound", `etcd lease ${lease} has expired`, { cause: error });
    throw error;
  };
}
