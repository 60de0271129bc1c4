// --etcd_config: the etcd client's settings file, in the 2014 go-etcd JSON or the plain
// `{endpoints, caFile, certFile, keyFile, username, password, dialTimeout}`, read into the plain values
// the etcd source takes (the composition root hands them over). Errors name the file and the key.
// `kubelet fleet` also takes etcdctl's environment (ETCDCTL_ENDPOINTS, _CACERT, _CERT, _KEY, _USER).
import { X509Certificate, createPrivateKey } from "node:crypto";
import { readFileSync } from "node:fs";
import { parseDuration } from "../api/duration.ts";
import { parseYaml } from "../api/manifest.ts";
import { KubeletError } from "../api/types.ts";

/** The etcd client settings a file gives. */
export interface EtcdClientSettings {
  endpoints: string[];
  dialTimeoutMs: number;
  /** caFile, certFile and keyFile: read at start to check them, and again by the client when they change. */
  tls?: { caFile: string; certFile?: string; keyFile?: string };
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
  const settings: EtcdClientSettings = { endpoints: endpoints.map(String), dialTimeoutMs: 5000 };
  // go-etcd's timeout is a Go time.Duration in JSON: nanoseconds.
  if (legacy.dialTimeout !== undefined && legacy.dialTimeout !== null)
    settings.dialTimeoutMs =
      typeof legacy.dialTimeout === "number" ? legacy.dialTimeout / 1e6 : parseDuration(String(legacy.dialTimeout));
  const tls = checkTlsFiles(
    { caFile: legacy.caFile, certFile: legacy.certFile, keyFile: legacy.keyFile },
    (name) => name,
    fail,
  );
  if (tls) settings.tls = tls;
  if (legacy.username) settings.auth = { username: String(legacy.username), password: String(legacy.password ?? "") };
  return settings;
}

type TlsFileNames = { caFile: unknown; certFile: unknown; keyFile: unknown };

/**
 * Checks the certificate files (readable PEM, a client certificate with its key) so a mistake is reported at
 * start; `label` names a setting as the user wrote it, `fail` builds the error.
 */
function checkTlsFiles(
  names: TlsFileNames,
  label: (name: keyof TlsFileNames) => string,
  fail: (why: string) => Error,
): EtcdClientSettings["tls"] | undefined {
  const { caFile, certFile, keyFile } = names;
  if (!caFile && !certFile && !keyFile) return undefined;
  if (!caFile)
    throw fail(
      `${label(certFile ? "certFile" : "keyFile")} needs ${label("caFile")}, the CA that signed etcd's certificate`,
    );
  if (Boolean(certFile) !== Boolean(keyFile))
    throw fail(`${label("certFile")} and ${label("keyFile")} go together: give both or neither`);
  const read = (name: keyof TlsFileNames, what: string, parse: (pem: Buffer) => unknown) => {
    const path = String(names[name]);
    let pem: Buffer;
    try {
      pem = readFileSync(path);
    } catch (error) {
      throw fail(`${label(name)} "${path}": ${(error as Error).message}`);
    }
    try {
      parse(pem);
    } catch (error) {
      throw fail(`${label(name)} "${path}": not a PEM ${what} (${(error as Error).message})`);
    }
    return path;
  };
  const certificate = (pem: Buffer) => new X509Certificate(pem);
  return {
    caFile: read("caFile", "certificate", certificate),
    ...(certFile
      ? {
          certFile: read("certFile", "certificate", certificate),
          keyFile: read("keyFile", "private key", (pem) => createPrivateKey(pem)),
        }
      : {}),
  };
}

/** etcdctl's variables for the certificate files. */
const ETCDCTL = { caFile: "ETCDCTL_CACERT", certFile: "ETCDCTL_CERT", keyFile: "ETCDCTL_KEY" } as const;

/**
 * `kubelet fleet`'s etcd: --etcd_config alone when given; else the endpoints of --etcd_servers or
 * ETCDCTL_ENDPOINTS, with ETCDCTL_CACERT, ETCDCTL_CERT, ETCDCTL_KEY and ETCDCTL_USER ("name:password", or
 * the name with ETCDCTL_PASSWORD). Undefined when neither flags nor environment name an endpoint.
 */
export function fleetEtcdSettings(
  config: { etcdServers: string[]; etcdConfig?: string },
  env: Record<string, string | undefined>,
): EtcdClientSettings | undefined {
  if (config.etcdConfig) return readEtcdConfig(config.etcdConfig);
  const fromEnv = (env.ETCDCTL_ENDPOINTS ?? "").split(",").map((e) => e.trim());
  const endpoints = config.etcdServers.length > 0 ? config.etcdServers : fromEnv.filter(Boolean);
  if (endpoints.length === 0) return undefined;
  const settings: EtcdClientSettings = { endpoints, dialTimeoutMs: 5000 };
  const tls = checkTlsFiles(
    { caFile: env.ETCDCTL_CACERT, certFile: env.ETCDCTL_CERT, keyFile: env.ETCDCTL_KEY },
    (name) => ETCDCTL[name],
    (why) => new KubeletError("InvalidValue", why),
  );
  if (tls) settings.tls = tls;
  const user = env.ETCDCTL_USER;
  if (user) {
    const colon = user.indexOf(":");
    settings.auth =
      colon < 0
        ? { username: user, password: env.ETCDCTL_PASSWORD ?? "" }
        : { username: user.slice(0, colon), password: user.slice(colon + 1) };
  }
  return settings;
}

/** The etcd settings of --etcd_servers or --etcd_config (one of them; the configuration rejects both). */
export function etcdSettings(config: { etcdServers: string[]; etcdConfig?: string }): EtcdClientSettings {
  return config.etcdConfig ? readEtcdConfig(config.etcdConfig) : { endpoints: config.etcdServers, dialTimeoutMs: 5000 };
}

function isMapping(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
