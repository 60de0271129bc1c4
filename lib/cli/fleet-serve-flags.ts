// `kubelet fleet serve`'s flags (kube-apiserver's names where it has one) and the settings they make; the
// server itself (fleet-serve.ts) loads only when the command runs.
import { parseDuration } from "../api/duration.ts";

export interface FleetServeSettings {
  address: string;
  port: number;
  tlsCertFile: string;
  tlsPrivateKeyFile: string;
  clientCaFile: string;
  tokenAuthFile: string;
  authorizationMode: "AlwaysAllow" | "RBAC";
  authorizationPolicyFile: string;
  anonymous: boolean;
  kubeletCertificateAuthority: string;
  kubeletClientCertificate: string;
  kubeletClientKey: string;
  kubeletTokenFile: string;
  kubeletAddressOverride: string;
  nodeMonitorGracePeriodMs: number;
  /** --allow-privileged (the placement flag): pods created through the API may be privileged. */
  allowPrivileged: boolean;
  /** --max-unpaged-list: a pods list of at most this many items is answered whole whatever its limit. */
  maxUnpagedList: number;
}

/** Adds fleet serve's flags to the fleet command. */
export function fleetServeOptions(command: { option(name: string, description: string): unknown }): void {
  const option = (name: string, description: string) => command.option(name, `serve: ${description}`);
  option("--bind-address <ip>", "address to listen on (default 127.0.0.1)");
  option("--secure-port <port>", "HTTPS port (default 6443)");
  option("--tls-cert-file <file>", "serving certificate (required: kubectl sends no token over http)");
  option("--tls-private-key-file <file>", "its key");
  option("--client-ca-file <file>", "authenticate client certificates signed by this CA (user CN, groups O)");
  option("--token-auth-file <file>", 'bearer tokens (token,user,uid,"group1,group2"), as --auth_token_file');
  option("--authorization-mode <mode>", "AlwaysAllow or RBAC (default RBAC)");
  option("--authorization-policy-file <file>", "RBAC: Roles, ClusterRoles and their bindings (YAML)");
  option("--anonymous-auth", "let requests without credentials in as system:anonymous (default false)");
  option("--kubelet-certificate-authority <file>", "CA of the nodes' serving certificates (logs, exec)");
  option("--kubelet-client-certificate <file>", "client certificate fleet serve shows the nodes");
  option("--kubelet-client-key <file>", "its key");
  option("--kubelet-token-file <file>", "bearer token fleet serve sends the nodes");
  option("--kubelet-address-override <ip>", "reach every node at this address (nodes sharing one host)");
  option("--node-monitor-grace-period <duration>", "a lease not renewed this long makes a node Unknown (default 40s)");
  option(
    "--max-unpaged-list <n>",
    `answer a pods list of up to n items whole whatever its limit; 0 pages every list (default ${DEFAULT_MAX_UNPAGED_LIST})`,
  );
}

/**
 * Decision: kubectl pages at 500 rows but sends at most 5 requests a second after a burst of 10 (client-go's
 * limiter), so 30,000 pods in pages cost it >= 10 s whatever the server does; a list up to this size is answered in
 * one response (as kube-apiserver answers a list from its watch cache), which the API allows: a client reads on only
 * while `continue` is set.
 */
export const DEFAULT_MAX_UNPAGED_LIST = 50_000;

const text = (value: unknown) => (typeof value === "string" ? value : value === undefined ? "" : String(value));

/** The flags as settings; `usage` builds the error naming a wrong one and its fix. */
export function fleetServeSettings(
  options: Record<string, unknown>,
  usage: (message: string) => Error,
): FleetServeSettings {
  const port = options.securePort === undefined ? 6443 : Number(options.securePort);
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw usage(`--secure-port "${text(options.securePort)}": expected a port number 0-65535`);
  const settings: FleetServeSettings = {
    address: text(options.bindAddress) || "127.0.0.1",
    port,
    tlsCertFile: text(options.tlsCertFile),
    tlsPrivateKeyFile: text(options.tlsPrivateKeyFile),
    clientCaFile: text(options.clientCaFile),
    tokenAuthFile: text(options.tokenAuthFile),
    authorizationMode: (text(options.authorizationMode) || "RBAC") as FleetServeSettings["authorizationMode"],
    authorizationPolicyFile: text(options.authorizationPolicyFile),
    anonymous: options.anonymousAuth === true || options.anonymousAuth === "true",
    kubeletCertificateAuthority: text(options.kubeletCertificateAuthority),
    kubeletClientCertificate: text(options.kubeletClientCertificate),
    kubeletClientKey: text(options.kubeletClientKey),
    kubeletTokenFile: text(options.kubeletTokenFile),
    kubeletAddressOverride: text(options.kubeletAddressOverride),
    nodeMonitorGracePeriodMs: 40_000,
    allowPrivileged: options.allowPrivileged === true || options.allowPrivileged === "true",
    maxUnpagedList: options.maxUnpagedList === undefined ? DEFAULT_MAX_UNPAGED_LIST : Number(options.maxUnpagedList),
  };
  if (!Number.isSafeInteger(settings.maxUnpagedList) || settings.maxUnpagedList < 0)
    throw usage(
      `--max-unpaged-list "${text(options.maxUnpagedList)}": expected a whole number of pods, 0 or more (0 pages every list)`,
    );
  if (!settings.tlsCertFile || !settings.tlsPrivateKeyFile)
    throw usage("fleet serve needs --tls-cert-file and --tls-private-key-file: kubectl sends no credentials over http");
  if (!["AlwaysAllow", "RBAC"].includes(settings.authorizationMode))
    throw usage(`--authorization-mode "${settings.authorizationMode}": use AlwaysAllow or RBAC`);
  if (settings.authorizationMode === "RBAC" && !settings.authorizationPolicyFile)
    throw usage("--authorization-mode RBAC needs --authorization-policy-file (or --authorization-mode AlwaysAllow)");
  if (!settings.clientCaFile && !settings.tokenAuthFile && !settings.anonymous)
    throw usage("fleet serve would refuse everyone: give --token-auth-file or --client-ca-file (or --anonymous-auth)");
  if (Boolean(settings.kubeletClientCertificate) !== Boolean(settings.kubeletClientKey))
    throw usage("--kubelet-client-certificate and --kubelet-client-key go together");
  if (options.nodeMonitorGracePeriod !== undefined) {
    try {
      settings.nodeMonitorGracePeriodMs = parseDuration(text(options.nodeMonitorGracePeriod));
    } catch (error) {
      throw usage(`--node-monitor-grace-period: ${(error as Error).message}`);
    }
  }
  return settings;
}
