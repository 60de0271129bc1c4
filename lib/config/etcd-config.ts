// --etcd_config: the etcd client's settings file, in the 2014 go-etcd JSON or the plain
// `{endpoints, caFile, certFile, keyFile, username, password, dialTimeout}`, read into the plain values
// the etcd source takes (the composition root hands them over). Errors name the file and the key.
import { readFileSync } from "node:fs";
import { parseDuration } from "./values.ts";
import { parseYaml } from "../api/manifest.ts";
import { KubeletError } from "../api/types.ts";

/** The etcd client settings a file gives. */
export interface EtcdClientSettings {
  endpoints: string[];
  dialTimeoutMs: number;
  /** PEM contents of caFile, certFile and keyFile. */
  tls?: { ca: Buffer; cert?: Buffer; key?: Buffer };
  auth?: { username: string; password: string };
}

const KEYS = ["endpoints", "caFile", "certFile", "keyFile", "username", "password", "dialTimeout"];

/** Reads --etcd_config; errors name the file and the key. */
export function readEtcdConfig(path: string): EtcdClientSettings {
  const fail = (why: string) => new KubeletError("InvalidConfigFile", `--etcd_config "${path}": ${why}`);
  let doc: unknown;
  try {
    doc = parseYaml(readFileSync(path, "utf8"));
  } catch (error) {
    throw fail((error as Error).message);
  }
  if (!isMapping(doc)) throw fail("expected a mapping");
  const cluster = isMapping(doc.cluster) ? doc.cluster : undefined;
  const client = isMapping(doc.config) ? doc.config : undefined;
  const legacy: Record<string, unknown> =
    cluster || client
      ? {
          endpoints: cluster?.machines,
          caFile: Array.isArray(client?.caCertFiles) ? client.caCertFiles[0] : undefined,
          certFile: client?.certFile,
          keyFile: client?.keyFile,
          dialTimeout: client?.timeout,
        }
      : doc;
  const endpoints = legacy.endpoints;
  if (!Array.isArray(endpoints) || endpoints.length === 0)
    throw fail(`"endpoints" (or cluster.machines) must list at least one URL`);
  for (const name of Object.keys(legacy)) if (!KEYS.includes(name)) throw fail(`unknown setting "${name}"`);
  const file = (name: string, value: unknown) => {
    try {
      return readFileSync(String(value));
    } catch (error) {
      throw fail(`${name}: ${(error as Error).message}`);
    }
  };
  const settings: EtcdClientSettings = { endpoints: endpoints.map(String), dialTimeoutMs: 5000 };
  // go-etcd's timeout is a Go time.Duration in JSON: nanoseconds.
  if (legacy.dialTimeout !== undefined && legacy.dialTimeout !== null)
    settings.dialTimeoutMs =
      typeof legacy.dialTimeout === "number" ? legacy.dialTimeout / 1e6 : parseDuration(String(legacy.dialTimeout));
  if (legacy.caFile)
    settings.tls = {
      ca: file("caFile", legacy.caFile),
      ...(legacy.certFile ? { cert: file("certFile", legacy.certFile) } : {}),
      ...(legacy.keyFile ? { key: file("keyFile", legacy.keyFile) } : {}),
    };
  if (legacy.username) settings.auth = { username: String(legacy.username), password: String(legacy.password ?? "") };
  return settings;
}

/** The etcd settings of --etcd_servers or --etcd_config (one of them; the configuration rejects both). */
export function etcdSettings(config: { etcdServers: string[]; etcdConfig?: string }): EtcdClientSettings {
  return config.etcdConfig ? readEtcdConfig(config.etcdConfig) : { endpoints: config.etcdServers, dialTimeoutMs: 5000 };
}

function isMapping(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
