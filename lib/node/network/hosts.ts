// A pod's /etc/hosts as the Go kubelet writes it (kubelet_pods.go managedHostsFileContent,
// nodeHostsFileContent): localhost entries, the pod's IP with its hostname (and FQDN with a subdomain),
// then hostAliases; a host-network pod gets the node's own file plus its aliases.
import { podHostnameAndDomain } from "../../api/pod-hostname.ts";
import type { Pod } from "../../api/types.ts";

function aliasEntries(pod: Pod): string {
  const aliases = pod.spec.hostAliases ?? [];
  if (!aliases.length) return "";
  return `\n# Entries added by HostAliases.\n${aliases.map((a) => `${a.ip}\t${(a.hostnames ?? []).join("\t")}\n`).join("")}`;
}

/**
 * The hosts file of a pod with its own network. Without an IP (--pod_network_mode none) the pod's own line
 * is left out; localhost and the aliases still resolve.
 */
export function managedHostsFile(pod: Pod, podIP: string, clusterDomain: string): string {
  const { hostname, domain } = podHostnameAndDomain(pod, clusterDomain);
  const own = !podIP ? "" : domain ? `${podIP}\t${hostname}.${domain}\t${hostname}\n` : `${podIP}\t${hostname}\n`;
  return (
    "# Kubernetes-managed hosts file.\n" +
    "127.0.0.1\tlocalhost\n" +
    "::1\tlocalhost ip6-localhost ip6-loopback\n" +
    "fe00::\tip6-localnet\n" +
    "fe00::\tip6-mcastprefix\n" +
    "fe00::1\tip6-allnodes\n" +
    "fe00::2\tip6-allrouters\n" +
    own +
    aliasEntries(pod)
  );
}

/** The hosts file of a host-network pod: the node's file, then the pod's aliases. */
export function nodeHostsFile(pod: Pod, nodeHosts: string): string {
  return `# Kubernetes-managed hosts file (host network).\n${nodeHosts}${aliasEntries(pod)}`;
}
