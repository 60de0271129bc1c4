import { describe, expect, test } from "bun:test";
import { DEFAULT_MAX_UNPAGED_LIST, fleetServeSettings } from "./fleet-serve-flags.ts";

const usage = (message: string) => new Error(message);
const tls = { tlsCertFile: "c.crt", tlsPrivateKeyFile: "c.key", tokenAuthFile: "t.csv" };

describe("fleet serve's flags", () => {
  test("defaults: loopback, port 6443, RBAC, a 40 s grace period", () => {
    const settings = fleetServeSettings({ ...tls, authorizationPolicyFile: "p.yaml" }, usage);
    expect(settings).toMatchObject({ address: "127.0.0.1", port: 6443, authorizationMode: "RBAC" });
    expect(settings.nodeMonitorGracePeriodMs).toBe(40_000);
    expect(settings.maxUnpagedList).toBe(DEFAULT_MAX_UNPAGED_LIST);
  });

  test.each([
    [{}, "fleet serve needs --tls-cert-file and --tls-private-key-file"],
    [
      { ...tls, authorizationMode: "AlwaysAllow", securePort: "x" },
      '--secure-port "x": expected a port number 0-65535',
    ],
    [{ ...tls, authorizationMode: "Webhook" }, '--authorization-mode "Webhook": use AlwaysAllow or RBAC'],
    [{ ...tls }, "--authorization-mode RBAC needs --authorization-policy-file"],
    [{ ...tls, tokenAuthFile: undefined, authorizationMode: "AlwaysAllow" }, "fleet serve would refuse everyone"],
    [
      { ...tls, authorizationMode: "AlwaysAllow", kubeletClientCertificate: "n.crt" },
      "--kubelet-client-certificate and --kubelet-client-key go together",
    ],
    [{ ...tls, authorizationMode: "AlwaysAllow", nodeMonitorGracePeriod: "soon" }, "--node-monitor-grace-period:"],
    [
      { ...tls, authorizationMode: "AlwaysAllow", maxUnpagedList: "-1" },
      '--max-unpaged-list "-1": expected a whole number of pods, 0 or more (0 pages every list)',
    ],
  ])("%j is refused: %s", (options, message) => {
    expect(() => fleetServeSettings(options as Record<string, unknown>, usage)).toThrow(message);
  });

  test("--node-monitor-grace-period takes a Go duration", () => {
    const settings = fleetServeSettings(
      { ...tls, authorizationMode: "AlwaysAllow", nodeMonitorGracePeriod: "1m" },
      usage,
    );
    expect(settings.nodeMonitorGracePeriodMs).toBe(60_000);
  });
});
