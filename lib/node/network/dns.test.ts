import { describe, expect, test } from "bun:test";
import { testPod } from "../../testing/pods.ts";
import { formatResolvConf, parseResolvConf, podDnsConfig } from "./dns.ts";

const host = parseResolvConf("# host\nnameserver 10.0.0.2\nsearch corp.example.\noptions edns0\n");
const cluster = { clusterDns: ["10.96.0.10"], clusterDomain: "cluster.local" };

describe("pod DNS", () => {
  test("ClusterFirst gets the cluster servers, the cluster search paths then the host's, and ndots:5", () => {
    const { dns, warnings } = podDnsConfig(testPod("web", {}, { namespace: "shop" }), host, cluster);
    expect(formatResolvConf(dns)).toBe(
      "nameserver 10.96.0.10\nsearch shop.svc.cluster.local svc.cluster.local cluster.local corp.example\noptions ndots:5\n",
    );
    expect(warnings).toEqual([]);
  });

  test("without cluster DNS, ClusterFirst falls back to Default with a MissingClusterDNS event", () => {
    const { dns, warnings } = podDnsConfig(testPod("web"), host, { clusterDns: [], clusterDomain: "" });
    expect(dns).toEqual(host);
    expect(warnings.map((w) => w.reason)).toEqual(["MissingClusterDNS"]);
    expect(warnings[0]!.message).toContain('Falling back to "Default" policy');
  });

  test("hostNetwork pods use the node's resolver unless they ask for ClusterFirstWithHostNet", () => {
    expect(podDnsConfig(testPod("h", { hostNetwork: true }), host, cluster).dns).toEqual(host);
    expect(
      podDnsConfig(testPod("h", { hostNetwork: true, dnsPolicy: "ClusterFirstWithHostNet" }), host, cluster).dns
        .servers,
    ).toEqual(["10.96.0.10"]);
  });

  test("dnsConfig merges in; beyond three nameservers some are dropped with a DNSConfigForming event", () => {
    const pod = testPod("web", {
      dnsConfig: { nameservers: ["1.1.1.1", "8.8.8.8", "9.9.9.9"], options: [{ name: "ndots", value: "2" }] },
    });
    const { dns, warnings } = podDnsConfig(pod, host, cluster);
    expect(dns.servers).toEqual(["10.96.0.10", "1.1.1.1", "8.8.8.8"]);
    expect(dns.options).toEqual(["ndots:2"]);
    expect(warnings[0]).toEqual({
      reason: "DNSConfigForming",
      message:
        "Nameserver limits were exceeded, some nameservers have been omitted, the applied nameserver line is: 10.96.0.10 1.1.1.1 8.8.8.8",
    });
  });
});
