// Pure: a pod's hostname and domain, and the hostname its sandbox gets (the Go kubelet's
// GeneratePodHostNameAndDomain, kubelet_pods.go). The sandbox config and the pod's /etc/hosts both read them.
import { KubeletError, type Pod } from "./types.ts";

/** The pod's hostname and, with a subdomain, its domain (GeneratePodHostNameAndDomain). */
export function podHostnameAndDomain(pod: Pod, clusterDomain: string): { hostname: string; domain?: string } {
  const hostname = (pod.spec.hostname || pod.metadata.name).slice(0, 63).replace(/[-.]+$/, "");
  const subdomain = pod.spec.subdomain;
  return subdomain && clusterDomain
    ? { hostname, domain: `${subdomain}.${pod.metadata.namespace}.svc.${clusterDomain}` }
    : { hostname };
}

/**
 * The sandbox's hostname: the pod's, or its FQDN with setHostnameAsFQDN and a subdomain. A FQDN longer
 * than 64 characters is refused with the Go kubelet's message.
 */
export function sandboxHostname(pod: Pod, clusterDomain: string): string {
  const { hostname, domain } = podHostnameAndDomain(pod, clusterDomain);
  if (!pod.spec.setHostnameAsFQDN || !domain) return hostname;
  const fqdn = `${hostname}.${domain}`;
  if (fqdn.length > 64)
    throw new KubeletError(
      "InvalidValue",
      `failed to construct FQDN from pod hostname and cluster domain, FQDN ${fqdn} is too long (64 characters is the max, ${fqdn.length} characters requested)`,
    );
  return fqdn;
}
