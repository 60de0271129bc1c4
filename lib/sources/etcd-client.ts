// The only etcd3 import: a narrow etcd client (get, list, put on a lease, delete, leases, watch) shared
// by the etcd source, the fleet reporter and `kubelet fleet`, and --etcd_config parsing.
import { Etcd3, type IOptions } from "etcd3";
import { readFileSync } from "node:fs";
import { parseDuration } from "../config/config.ts";
import { parseYaml } from "../api/manifest.ts";
import { KubeletError } from "../api/types.ts";

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
  connected?(): void;
}

/** What the kubelet asks of etcd. Errors are etcd3's; "LeaseNotFound" when a lease has expired. */
export interface EtcdClient {
  get(key: string): Promise<{ entry?: EtcdEntry; revision: number }>;
  list(prefix: string): Promise<{ entries: EtcdEntry[]; revision: number }>;
  put(key: string, value: string, lease?: string): Promise<void>;
  delete(key: string): Promise<void>;
  /**
   * Puts (`value` set, on `lease`) and deletes (`value` undefined) in transactions of at most 100 operations:
   * a batch of changes costs etcd one revision. Throws "LeaseNotFound" when the lease has expired.
   */
  apply(changes: Array<{ key: string; value?: string }>, lease?: string): Promise<void>;
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

/** Connection settings: from --etcd_servers, or read from --etcd_config by readEtcdConfig. */
export interface EtcdClientOptions {
  hosts: string[];
  dialTimeout: number;
  credentials?: { rootCertificate: Buffer; privateKey?: Buffer; certChain?: Buffer };
  auth?: { username: string; password: string };
}

/** The client settings of --etcd_servers or --etcd_config; throws when there is no endpoint. */
export function etcdClientOptions(options: { endpoints?: string[]; configFile?: string }): EtcdClientOptions {
  const clientOptions = options.configFile
    ? readEtcdConfig(options.configFile)
    : { hosts: options.endpoints ?? [], dialTimeout: 5000 };
  if (clientOptions.hosts.length === 0) throw new KubeletError("InvalidValue", "etcd needs at least one endpoint");
  return clientOptions;
}

/** etcd's default --max-txn-ops is 128. */
const TXN_OPS = 100;

/** Calls to a member that does not answer fail after this, so a lost cluster is noticed and retried. */
const CALL_TIMEOUT_MS = 5000;

export function createEtcdClient(options: EtcdClientOptions): EtcdClient {
  const client = new Etcd3(options as IOptions);
  const deadline = () => ({ deadline: new Date(Date.now() + CALL_TIMEOUT_MS) });
  const entry = (kv: { key: Buffer; value: Buffer; lease: string; mod_revision: string }): EtcdEntry => ({
    key: kv.key.toString("utf8"),
    value: kv.value.toString("utf8"),
    lease: String(kv.lease ?? "0"),
    modRevision: Number(kv.mod_revision),
  });
  return {
    async get(key) {
      const response = await client.get(key).options(deadline()).exec();
      const kv = response.kvs[0];
      return { entry: kv ? entry(kv) : undefined, revision: Number(response.header.revision) };
    },
    async list(prefix) {
      const response = await client.getAll().prefix(prefix).options(deadline()).exec();
      return { entries: response.kvs.map(entry), revision: Number(response.header.revision) };
    },
    async put(key, value, lease) {
      const builder = client.put(key).value(value).options(deadline());
      await (lease ? builder.lease(lease) : builder).exec().catch(leaseError(lease));
    },
    async delete(key) {
      await client.delete().key(key).options(deadline()).exec();
    },
    async apply(changes, lease) {
      for (let i = 0; i < changes.length; i += TXN_OPS) {
        const success = changes
          .slice(i, i + TXN_OPS)
          .map(({ key, value }) =>
            value === undefined
              ? { request_delete_range: { key: Buffer.from(key) } }
              : { request_put: { key: Buffer.from(key), value: Buffer.from(value), lease: lease ?? "0" } },
          );
        await client.kv.txn({ compare: [], success, failure: [] }, deadline()).catch(leaseError(lease));
      }
    },
    async grantLease(ttlSeconds) {
      return String((await client.leaseClient.leaseGrant({ TTL: ttlSeconds }, deadline())).ID);
    },
    async keepAlive(lease) {
      const stream = await client.leaseClient.leaseKeepAlive(deadline());
      try {
        const response = await new Promise<{ TTL: string }>((resolve, reject) => {
          stream.on("data", resolve);
          stream.on("error", reject);
          stream.write({ ID: lease });
        });
        const ttl = Number(response.TTL);
        if (ttl <= 0) throw new KubeletError("LeaseNotFound", `etcd lease ${lease} has expired`);
        return ttl;
      } finally {
        stream.end();
      }
    },
    async leaseTimeToLive(lease) {
      const response = await client.leaseClient.leaseTimeToLive({ ID: lease }, deadline());
      const ttl = Number(response.TTL);
      return ttl < 0 ? undefined : { ttl, granted: Number(response.grantedTTL) };
    },
    async revokeLease(lease) {
      await client.leaseClient.leaseRevoke({ ID: lease }, deadline());
    },
    async watch(target, startRevision, handlers) {
      const builder = client.watch();
      const scoped = "key" in target ? builder.key(target.key) : builder.prefix(target.prefix);
      const watcher = await scoped.startRevision(String(startRevision)).create();
      let ended = () => {};
      const done = new Promise<void>((resolve, reject) => {
        ended = resolve;
        watcher.on("put", (kv) => handlers.put(entry(kv)));
        watcher.on("delete", (kv) => handlers.delete(kv.key.toString("utf8")));
        watcher.on("disconnected", () => handlers.disconnected?.());
        watcher.on("connected", () => handlers.connected?.());
        watcher.on("error", reject);
        watcher.on("end", resolve);
      });
      return {
        done,
        cancel: () => watcher.cancel().then(ended, ended),
      };
    },
    close: () => client.close(),
  };
}

/** etcd's "requested lease not found" as the KubeletError callers check by code. */
function leaseError(lease: string | undefined) {
  return (error: Error): never => {
    if (/lease not found/.test(error.message))
      throw new KubeletError("LeaseNotFound", `etcd lease ${lease} has expired`, { cause: error });
    throw error;
  };
}

/** Reads --etcd_config; errors name the file and the key. */
export function readEtcdConfig(path: string): EtcdClientOptions {
  const fail = (why: string) => new KubeletError("InvalidConfigFile", `--etcd_config "${path}": ${why}`);
  let doc: Record<string, any>;
  try {
    doc = parseYaml(readFileSync(path, "utf8")) as Record<string, any>;
  } catch (error) {
    throw fail((error as Error).message);
  }
  if (!doc || typeof doc !== "object") throw fail("expected a mapping");
  const legacy =
    doc.cluster || doc.config
      ? {
          endpoints: doc.cluster?.machines,
          caFile: doc.config?.caCertFiles?.[0],
          certFile: doc.config?.certFile,
          keyFile: doc.config?.keyFile,
          dialTimeout: doc.config?.timeout,
        }
      : doc;
  const endpoints = legacy.endpoints;
  if (!Array.isArray(endpoints) || endpoints.length === 0)
    throw fail(`"endpoints" (or cluster.machines) must list at least one URL`);
  const file = (name: string, value: unknown) => {
    try {
      return readFileSync(String(value));
    } catch (error) {
      throw fail(`${name}: ${(error as Error).message}`);
    }
  };
  const options: EtcdClientOptions = { hosts: endpoints.map(String), dialTimeout: 5000 };
  if (legacy.dialTimeout !== undefined) {
    options.dialTimeout =
      typeof legacy.dialTimeout === "number" ? legacy.dialTimeout / 1e6 : parseDuration(String(legacy.dialTimeout));
  }
  if (legacy.caFile) {
    options.credentials = { rootCertificate: file("caFile", legacy.caFile) };
    if (legacy.certFile) options.credentials.certChain = file("certFile", legacy.certFile);
    if (legacy.keyFile) options.credentials.privateKey = file("keyFile", legacy.keyFile);
  }
  if (legacy.username) options.auth = { username: String(legacy.username), password: String(legacy.password ?? "") };
  for (const name of Object.keys(legacy)) {
    if (!["endpoints", "caFile", "certFile", "keyFile", "username", "password", "dialTimeout"].includes(name))
      throw fail(`unknown setting "${name}"`);
  }
  return options;
}
