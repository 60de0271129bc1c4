// The pod's /etc/hosts: the Go kubelet's file, byte for byte.
import { expect, test } from "bun:test";
import { managedHostsFile, nodeHostsFile } from "./hosts.ts";
import { testPod } from "../../testing/pods.ts";

const LOCAL =
  "# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\nfe00::\tip6-localnet\nfe00::\tip6-mcastprefix\nfe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n";

test("the managed file has the pod's IP with its FQDN and hostname under a subdomain, then its aliases", () => {
  const pod = testPod("web-0", {
    subdomain: "web",
    hostAliases: [{ ip: "10.0.0.9", hostnames: ["db", "db.internal"] }],
  });
  expect(managedHostsFile(pod, "10.1.0.4", "cluster.local")).toBe(
    `${LOCAL}10.1.0.4\tweb-0.web.default.svc.cluster.local\tweb-0\n\n# Entries added by HostAliases.\n10.0.0.9\tdb\tdb.internal\n`,
  );
  expect(managedHostsFile(testPod("solo"), "10.1.0.5", "cluster.local")).toBe(`${LOCAL}10.1.0.5\tsolo\n`);
  expect(managedHostsFile(testPod("solo"), "", "cluster.local")).toBe(LOCAL);
});

test("a host-network pod's file is the node's, marked, plus its aliases", () => {
  const pod = testPod("agent", { hostNetwork: true, hostAliases: [{ ip: "10.0.0.9", hostnames: ["db"] }] });
  expect(nodeHostsFile(pod, "127.0.0.1 localhost\n")).toBe(
    "# Kubernetes-managed hosts file (host network).\n127.0.0.1 localhost\n\n# Entries added by HostAliases.\n10.0.0.9\tdb\n",
  );
});
