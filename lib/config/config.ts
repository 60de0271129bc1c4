// Layer config/: the flag table, the config file, precedence and print-config. Imports api/ only;
// the composition root (lib/kubelet.ts) maps the settings onto each part's own options.
//
// The kubelet's configuration: the flag table, Go-style value parsing, the YAML config file,
// precedence (defaults < config file < flags) and print-config.
import { readFileSync } from "node:fs";
import { DEFAULT_CONFIG, type KubeletConfig } from "./config-types.ts";
import { parseYaml, stringifyYaml } from "../api/manifest.ts";
import { KubeletError } from "../api/types.ts";

export { DEFAULT_CONFIG, type KubeletConfig };

export type ValueType = "string" | "bool" | "uint" | "float" | "duration" | "list" | "headers" | "logformat";

/** One flag: its snake_case name (the 2014 spelling), its config key and how its value parses. */
export interface FlagSpec {
  flag: string;
  key: keyof KubeletConfig;
  type: ValueType;
  description: string;
  short?: string;
  /** KubeletConfiguration (modern config file) names accepted for this key. */
  aliases?: string[];
}

/** Every configuration flag, in the order `--help` lists them. */
export const FLAGS: FlagSpec[] = [
  {
    flag: "config",
    key: "config",
    type: "string",
    short: "c",
    aliases: ["staticPodPath"],
    description: "Path to the config file or directory of files (pod manifests)",
  },
  {
    flag: "sync_frequency",
    key: "syncFrequency",
    type: "duration",
    aliases: ["syncFrequency"],
    description: "Max period between synchronizing running containers and config",
  },
  {
    flag: "file_check_frequency",
    key: "fileCheckFrequency",
    type: "duration",
    aliases: ["fileCheckFrequency"],
    description: "Duration between checking config files for new data",
  },
  {
    flag: "http_check_frequency",
    key: "httpCheckFrequency",
    type: "duration",
    aliases: ["httpCheckFrequency"],
    description: "Duration between checking http for new data",
  },
  {
    flag: "manifest_url",
    key: "manifestUrl",
    type: "string",
    aliases: ["staticPodURL"],
    description: "URL for accessing the container manifest",
  },
  {
    flag: "manifest_url_header",
    key: "manifestUrlHeader",
    type: "headers",
    aliases: ["staticPodURLHeader"],
    description: "'Key: Value' header sent with --manifest_url (repeatable)",
  },
  { flag: "enable_server", key: "enableServer", type: "bool", description: "Enable the info server" },
  {
    flag: "address",
    key: "address",
    type: "string",
    aliases: ["address"],
    description: "The IP address for the info server to serve on",
  },
  {
    flag: "port",
    key: "port",
    type: "uint",
    aliases: ["port"],
    description: "The port for the info server to serve on",
  },
  {
    flag: "read_only_port",
    key: "readOnlyPort",
    type: "uint",
    aliases: ["readOnlyPort"],
    description: "A read-only port for the info server (0 = off)",
  },
  {
    flag: "hostname_override",
    key: "hostnameOverride",
    type: "string",
    description: "If non-empty, use this string as identification instead of the actual hostname",
  },
  {
    flag: "network_container_image",
    key: "networkContainerImage",
    type: "string",
    aliases: ["podInfraContainerImage"],
    description: "The image that network containers in each pod will use",
  },
  {
    flag: "pod_network_mode",
    key: "podNetworkMode",
    type: "string",
    description: "Docker network of pod infra containers: bridge, none, or a network name",
  },
  {
    flag: "docker_endpoint",
    key: "dockerEndpoint",
    type: "string",
    description: "If non-empty, use this for the docker endpoint to communicate with",
  },
  {
    flag: "etcd_servers",
    key: "etcdServers",
    type: "list",
    description: "List of etcd servers to watch (http://ip:port), comma separated or repeated",
  },
  {
    flag: "etcd_config",
    key: "etcdConfig",
    type: "string",
    description: "The config file for the etcd client. Mutually exclusive with --etcd_servers",
  },
  {
    flag: "root_dir",
    key: "rootDir",
    type: "string",
    aliases: ["rootDir"],
    description: "Directory path for managing kubelet files (volume mounts, etc)",
  },
  {
    flag: "allow_privileged",
    key: "allowPrivileged",
    type: "bool",
    description: "If true, allow containers to request privileged mode",
  },
  {
    flag: "allow_sensitive_host_paths",
    key: "allowSensitiveHostPaths",
    type: "bool",
    description: "If true, allow hostPath volumes at /, /etc, /proc, /sys, /dev or the Docker socket",
  },
  {
    flag: "max_manifest_bytes",
    key: "maxManifestBytes",
    type: "uint",
    description: "Largest manifest document read from a file, URL, etcd or an HTTP push, in bytes",
  },
  {
    flag: "registry_qps",
    key: "registryQps",
    type: "float",
    aliases: ["registryPullQPS"],
    description: "If > 0, limit registry pull QPS to this value; 0 = unlimited",
  },
  {
    flag: "registry_burst",
    key: "registryBurst",
    type: "uint",
    aliases: ["registryBurst"],
    description: "Maximum size of bursty pulls (only with --registry_qps > 0)",
  },
  {
    flag: "runonce",
    key: "runonce",
    type: "bool",
    description: "If true, exit after spawning pods from local manifests or remote urls",
  },
  {
    flag: "runonce_timeout",
    key: "runonceTimeout",
    type: "duration",
    description: "How long runonce waits for every pod to run",
  },
  {
    flag: "enable_debugging_handlers",
    key: "enableDebuggingHandlers",
    type: "bool",
    aliases: ["enableDebuggingHandlers"],
    description: "Enables server endpoints for log collection and local running of containers and commands",
  },
  {
    flag: "maximum_dead_containers_per_container",
    key: "maximumDeadContainersPerContainer",
    type: "uint",
    description: "Dead instances kept per container",
  },
  {
    flag: "auth_token_file",
    key: "authTokenFile",
    type: "string",
    description: "Bearer tokens (one per line) accepted by the info server",
  },
  {
    flag: "tls_cert_file",
    key: "tlsCertFile",
    type: "string",
    aliases: ["tlsCertFile"],
    description: "TLS certificate of the info server",
  },
  {
    flag: "tls_private_key_file",
    key: "tlsPrivateKeyFile",
    type: "string",
    aliases: ["tlsPrivateKeyFile"],
    description: "TLS private key of the info server",
  },
  {
    flag: "client_ca_file",
    key: "clientCaFile",
    type: "string",
    description: "CA bundle for verifying client certificates",
  },
  {
    flag: "log_format",
    key: "logFormat",
    type: "logformat",
    description: "Log format: text or json (default: text on a TTY, else json)",
  },
  {
    flag: "verbosity",
    key: "verbosity",
    type: "uint",
    short: "v",
    description: "Log verbosity: 0 warnings, 1 info, 2 debug",
  },
];

export type Origin = "default" | "file" | "flag";

export interface ResolvedConfig {
  config: KubeletConfig;
  origins: Record<keyof KubeletConfig, Origin>;
}

const UNITS: Record<string, number> = { ns: 1e-6, us: 1e-3, µs: 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** Go's time.ParseDuration ("1m30s", "500ms", "0"), in milliseconds. */
export function parseDuration(text: string): number {
  const input = String(text).trim();
  if (input === "0") return 0;
  const re = /(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)/gy;
  let total = 0;
  let consumed = 0;
  const sign = input.startsWith("-") ? -1 : 1;
  const body = input.replace(/^[-+]/, "");
  for (let match = re.exec(body); match; match = re.exec(body)) {
    total += Number(match[1]) * UNITS[match[2]!]!;
    consumed = re.lastIndex;
  }
  if (consumed === 0 || consumed !== body.length) {
    throw new KubeletError("InvalidValue", `invalid duration "${text}": use Go syntax such as 500ms, 10s, 1m30s or 1h`);
  }
  return sign * total;
}

/** Milliseconds as Go prints a duration: 10s, 1m30s, 500ms, 0s. */
export function formatDuration(ms: number): string {
  if (ms === 0) return "0s";
  if (ms < 1000) return `${ms}ms`;
  let rest = ms / 1000;
  let out = "";
  const hours = Math.floor(rest / 3600);
  if (hours) out += `${hours}h`;
  rest -= hours * 3600;
  const minutes = Math.floor(rest / 60);
  if (minutes || (hours && rest)) out += `${minutes}m`;
  rest -= minutes * 60;
  if (rest || !out) out += `${Number(rest.toFixed(3))}s`;
  return out;
}

/** Parses one raw value (from the command line or the config file) for a flag. */
export function parseValue(spec: FlagSpec, raw: unknown): KubeletConfig[keyof KubeletConfig] {
  const bad = (why: string) =>
    new KubeletError("InvalidValue", `invalid value ${JSON.stringify(raw)} for --${spec.flag}: ${why}`);
  const values = Array.isArray(raw) ? raw : [raw];
  const last = values[values.length - 1];
  switch (spec.type) {
    case "string":
      if (typeof last === "object") throw bad("expected a string");
      return String(last ?? "");
    case "bool": {
      if (typeof last === "boolean") return last;
      const text = String(last);
      if (["1", "t", "T", "true", "TRUE", "True"].includes(text)) return true;
      if (["0", "f", "F", "false", "FALSE", "False"].includes(text)) return false;
      throw bad("expected true or false");
    }
    case "uint": {
      const n = typeof last === "number" ? last : /^\d+$/.test(String(last)) ? Number(last) : NaN;
      if (!Number.isInteger(n) || n < 0) throw bad("expected a non-negative integer");
      if (spec.key.toLowerCase().endsWith("port") && n > 65535) throw bad("a port is at most 65535");
      return n;
    }
    case "float": {
      const n = typeof last === "number" ? last : Number(String(last).trim() || NaN);
      if (!Number.isFinite(n) || n < 0) throw bad("expected a non-negative number");
      return n;
    }
    case "duration": {
      if (typeof last === "number" && last !== 0) throw bad("durations need a unit, e.g. 10s or 500ms");
      try {
        const ms = parseDuration(String(last));
        if (ms < 0) throw bad("must not be negative");
        return ms;
      } catch (error) {
        if ((error as KubeletError).code === "InvalidValue" && !(error as Error).message.startsWith("invalid value"))
          throw bad((error as Error).message);
        throw error;
      }
    }
    case "list":
      return values
        .flatMap((v) => String(v).split(","))
        .map((s) => s.trim())
        .filter(Boolean);
    case "headers": {
      if (values.length === 1 && typeof last === "object" && last !== null) {
        return Object.fromEntries(
          Object.entries(last as Record<string, unknown>).map(([k, v]) => [
            k,
            (Array.isArray(v) ? v : [v]).map(String),
          ]),
        );
      }
      const headers: Record<string, string[]> = {};
      for (const value of values) {
        const text = String(value);
        const colon = text.indexOf(":");
        if (colon <= 0) throw bad('expected "Key: Value"');
        (headers[text.slice(0, colon).trim()] ??= []).push(text.slice(colon + 1).trim());
      }
      return headers;
    }
    case "logformat":
      if (last !== "text" && last !== "json") throw bad("expected text or json");
      return last;
  }
}

/** Reads the YAML config file into raw values by key; unknown keys are errors naming the file. */
export function readConfigFile(path: string): Partial<Record<keyof KubeletConfig, unknown>> {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    throw new KubeletError("InvalidConfigFile", `cannot read --config_file "${path}": ${(error as Error).message}`);
  }
  let doc: unknown;
  try {
    doc = parseYaml(text);
  } catch (error) {
    throw new KubeletError("InvalidConfigFile", `cannot parse --config_file "${path}": ${(error as Error).message}`);
  }
  if (doc === null || doc === undefined) return {};
  if (typeof doc !== "object" || Array.isArray(doc))
    throw new KubeletError("InvalidConfigFile", `--config_file "${path}": expected a mapping of settings`);
  const out: Partial<Record<keyof KubeletConfig, unknown>> = {};
  for (const [name, value] of Object.entries(doc as Record<string, unknown>)) {
    if (name === "kind" || name === "apiVersion") continue;
    const spec = findFlag(name);
    if (!spec)
      throw new KubeletError(
        "InvalidConfigFile",
        `--config_file "${path}": unknown setting "${name}" (settings are flag names such as sync_frequency, or KubeletConfiguration names such as staticPodPath)`,
      );
    out[spec.key] = value;
  }
  return out;
}

/** The flag spec for a flag name in any spelling (`etcd_servers`, `etcd-servers`, `etcdServers`, alias). */
export function findFlag(name: string): FlagSpec | undefined {
  const snake = name.replace(/-/g, "_");
  return FLAGS.find((f) => f.flag === snake || f.key === name || f.aliases?.includes(name));
}

/** defaults < config file < flags; `flags` holds raw command-line values by config key. */
export function resolveConfig(
  flags: Partial<Record<keyof KubeletConfig, unknown>>,
  configFile?: string,
): ResolvedConfig {
  const config = { ...DEFAULT_CONFIG, manifestUrlHeader: {}, etcdServers: [] } as KubeletConfig;
  const origins = Object.fromEntries(Object.keys(DEFAULT_CONFIG).map((k) => [k, "default"])) as Record<
    keyof KubeletConfig,
    Origin
  >;
  const apply = (values: Partial<Record<keyof KubeletConfig, unknown>>, origin: Origin, where: string) => {
    for (const [key, raw] of Object.entries(values) as Array<[keyof KubeletConfig, unknown]>) {
      const spec = FLAGS.find((f) => f.key === key);
      if (!spec || raw === undefined) continue;
      try {
        (config as unknown as Record<string, unknown>)[key] = parseValue(spec, raw);
      } catch (error) {
        throw new KubeletError("InvalidValue", `${where}${(error as Error).message}`);
      }
      origins[key] = origin;
    }
  };
  if (configFile) {
    apply(readConfigFile(configFile), "file", `--config_file "${configFile}": `);
    config.configFile = configFile;
    origins.configFile = "flag";
  }
  apply(flags, "flag", "");
  if (config.etcdServers.length > 0 && config.etcdConfig) {
    throw new KubeletError(
      "ExclusiveFlags",
      "--etcd_servers and --etcd_config are mutually exclusive: give one of them",
    );
  }
  return { config, origins };
}

/** The effective configuration as snake_case YAML (or JSON), optionally marking each value's origin. */
export function printConfig(
  resolved: ResolvedConfig,
  options: { format: "yaml" | "json"; showOrigin: boolean },
): string {
  const entries = FLAGS.map((spec) => {
    const value = resolved.config[spec.key];
    return [
      spec.flag,
      spec.type === "duration" ? formatDuration(value as number) : value,
      resolved.origins[spec.key],
    ] as const;
  });
  const values = Object.fromEntries(entries.map(([flag, value]) => [flag, value]));
  if (resolved.config.configFile) values.config_file = resolved.config.configFile;
  if (options.format === "json") {
    const body = options.showOrigin
      ? { config: values, origins: Object.fromEntries(entries.map(([flag, , origin]) => [flag, origin])) }
      : values;
    return JSON.stringify(body, null, 2) + "\n";
  }
  if (!options.showOrigin) return stringifyYaml(values);
  return (
    entries
      .map(([flag, value, origin]) => `${flag}: ${stringifyYaml(value, { flow: true }).trimEnd()}  # ${origin}`)
      .join("\n") + "\n"
  );
}
