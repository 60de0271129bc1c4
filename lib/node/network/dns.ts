// A pod's resolv.conf, as the kubelet forms it (pkg/kubelet/network/dns): ClusterFirst gets the
// cluster DNS servers and <ns>.svc.<domain> svc.<domain> <domain> plus the host's search paths
// (ndots:5); Default the node's resolv.conf; None only the pod's dnsConfig; hostNetwork pods need
// ClusterFirstWithHostNet for cluster DNS. dnsConfig merges in; limits are reported as events.
// The configurer also writes the pod's managed /etc/hosts (hosts.ts) beside it.
import { readFile, mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { Pod } from "../../api/types.ts";
import type { EventRecorder } from "../events/events.ts";
import { managedHostsFile, nodeHostsFile } from "./hosts.ts";

export interface DnsConfig {
  servers: string[];
  searches: string[];
  options: string[];
}

export const MAX_DNS_NAMESERVERS = 3;
export const MAX_DNS_SEARCH_PATHS = 32;
export const MAX_DNS_SEARCH_LIST_CHARS = 2048;
const DEFAULT_DNS_OPTIONS = ["ndots:5"];

/** Parses resolv.conf text: nameserver, search/domain and options lines; later search lines win, as in glibc. */
export function parseResolvConf(text: string): DnsConfig {
  const dns: DnsConfig = { servers: [], searches: [], options: [] };
  for (const raw of text.split("\n")) {
    const line = raw.replace(/[#;].*$/, "").trim();
    const [keyword, ...fields] = line.split(/\s+/);
    if (keyword === "nameserver" && fields[0]) dns.servers.push(fields[0]);
    else if (keyword === "search" || keyword === "domain") dns.searches = fields.map((f) => f.replace(/\.$/, ""));
    else if (keyword === "options") dns.options.push(...fields);
  }
  return dns;
}

/** resolv.conf text for a DnsConfig. */
export function formatResolvConf(dns: DnsConfig): string {
  return [
    ...dns.servers.map((s) => `nameserver ${s}`),
    ...(dns.searches.length ? [`search ${dns.searches.join(" ")}`] : []),
    ...(dns.options.length ? [`options ${dns.options.join(" ")}`] : []),
  ]
    .map((l) => `${l}\n`)
    .join("");
}

const unique = (values: string[]) => [...new Set(values)];

/** Pod options override the base's by name (`ndots:2` replaces `ndots:5`). */
function mergeOptions(base: string[], extra: Array<{ name?: string; value?: string }>): string[] {
  const byName = new Map(base.map((o) => [o.split(":")[0]!, o]));
  for (const o of extra) if (o.name) byName.set(o.name, o.value !== undefined ? `${o.name}:${o.value}` : o.name);
  return [...byName.values()];
}

export interface DnsSettings {
  clusterDns: string[];
  clusterDomain: string;
}

export interface DnsWarning {
  reason: "MissingClusterDNS" | "DNSConfigForming";
  message: string;
}

/** The pod's DNS configuration from the host's and the cluster's, with the warnings the kubelet records. */
export function podDnsConfig(
  pod: Pod,
  host: DnsConfig,
  settings: DnsSettings,
): { dns: DnsConfig; warnings: DnsWarning[] } {
  const warnings: DnsWarning[] = [];
  const policy = pod.spec.dnsPolicy ?? "ClusterFirst";
  let type: "cluster" | "host" | "none" =
    policy === "None"
      ? "none"
      : policy === "ClusterFirstWithHostNet" || (policy === "ClusterFirst" && !pod.spec.hostNetwork)
        ? "cluster"
        : "host";
  if (type === "cluster" && settings.clusterDns.length === 0) {
    warnings.push({
      reason: "MissingClusterDNS",
      message: `pod: "${pod.metadata.name}_${pod.metadata.namespace}(${pod.metadata.uid})". kubelet does not have ClusterDNS IP configured and cannot create Pod using "ClusterFirst" policy. Falling back to "Default" policy.`,
    });
    type = "host";
  }
  let dns: DnsConfig;
  if (type === "none") dns = { servers: [], searches: [], options: [] };
  else if (type === "host") dns = { ...host };
  else {
    const domain = settings.clusterDomain;
    const ns = pod.metadata.namespace;
    dns = {
      servers: [...settings.clusterDns],
      searches: domain ? unique([`${ns}.svc.${domain}`, `svc.${domain}`, domain, ...host.searches]) : host.searches,
      options: [...DEFAULT_DNS_OPTIONS],
    };
  }
  const extra = pod.spec.dnsConfig;
  if (extra) {
    dns = {
      servers: unique([...dns.servers, ...(extra.nameservers ?? [])]),
      searches: unique([...dns.searches, ...(extra.searches ?? [])]),
      options: mergeOptions(dns.options, extra.options ?? []),
    };
  }
  if (dns.servers.length > MAX_DNS_NAMESERVERS) {
    dns.servers = dns.servers.slice(0, MAX_DNS_NAMESERVERS);
    warnings.push({
      reason: "DNSConfigForming",
      message: `Nameserver limits were exceeded, some nameservers have been omitted, the applied nameserver line is: ${dns.servers.join(" ")}`,
    });
  }
  let searches = dns.searches.slice(0, MAX_DNS_SEARCH_PATHS);
  while (searches.join(" ").length > MAX_DNS_SEARCH_LIST_CHARS) searches = searches.slice(0, -1);
  if (searches.length < dns.searches.length) {
    dns.searches = searches;
    warnings.push({
      reason: "DNSConfigForming",
      message: `Search Line limits were exceeded, some search paths have been omitted, the applied search line is: ${searches.join(" ")}`,
    });
  }
  return { dns, warnings };
}

export interface DnsConfigurerOptions extends DnsSettings {
  /** The host's resolver file ("" = none: pods with Default then resolve through 127.0.0.1, as the kubelet does). */
  resolvConf: string;
  rootDir: string;
  /** The node's hosts file, the base of a host-network pod's (default /etc/hosts). */
  hostsFile?: string;
}

export interface DnsConfigurer {
  /** Writes the pod's resolv.conf under its pod directory and returns its path. */
  resolvConfFor(pod: Pod): Promise<string>;
  /** Writes the pod's /etc/hosts (its IP, hostname, hostAliases) under its pod directory and returns its path. */
  hostsFileFor(pod: Pod, podIP: string): Promise<string>;
  /** --cluster_domain: the pod's FQDN with a subdomain. */
  readonly clusterDomain: string;
  /** Drops what is known of a removed pod (its directory is gone with it). */
  forget(uid: string): void;
}

export function createDnsConfigurer(options: DnsConfigurerOptions, deps: { events: EventRecorder }): DnsConfigurer {
  const written = new Map<string, string>();
  const readHost = async (): Promise<DnsConfig> => {
    if (!options.resolvConf) return { servers: ["127.0.0.1"], searches: ["."], options: [] };
    try {
      return parseResolvConf(await readFile(options.resolvConf, "utf8"));
    } catch (error) {
      throw new Error(`cannot read --resolv_conf "${options.resolvConf}": ${(error as Error).message}`);
    }
  };
  return {
    async resolvConfFor(pod) {
      const { dns, warnings } = podDnsConfig(pod, await readHost(), options);
      const text = formatResolvConf(dns);
      const dir = join(options.rootDir, "pods", pod.metadata.uid);
      const path = join(dir, "etc-resolv.conf");
      // Events once per change, not on every sync of the pod.
      if (written.get(pod.metadata.uid) !== text) {
        await mkdir(dir, { recursive: true });
        await writeFile(path, text);
        written.set(pod.metadata.uid, text);
        for (const w of warnings) deps.events.record(pod, "Warning", w.reason, w.message);
      }
      return path;
    },
    async hostsFileFor(pod, podIP) {
      const text = pod.spec.hostNetwork
        ? nodeHostsFile(pod, await readFile(options.hostsFile ?? "/etc/hosts", "utf8").catch(() => ""))
        : managedHostsFile(pod, podIP, options.clusterDomain);
      const dir = join(options.rootDir, "pods", pod.metadata.uid);
      const path = join(dir, "etc-hosts");
      await mkdir(dir, { recursive: true });
      await writeFile(path, text);
      return path;
    },
    clusterDomain: options.clusterDomain,
    forget(uid) {
      written.delete(uid);
    },
  };
}
