import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { resolveConfig } from "./config.ts";
import { printConfig } from "./print-config.ts";
import { KUBELET_CONFIGURATION, verdictOf } from "./kubelet-configuration.ts";

const operators = join(import.meta.dir, "../../testdata/config/operators");
const dir = mkdtempSync(join(tmpdir(), "kubelet-config-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let count = 0;
/** Writes a KubeletConfiguration with `body` appended and returns its path. */
function configFile(body: string): string {
  const path = join(dir, `kubelet-${++count}.yaml`);
  writeFileSync(path, `apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n${body}\n`);
  return path;
}

describe("KubeletConfiguration files operators already have", () => {
  test("kubeadm's file loads: its security settings are honoured, its API-server fields reported", () => {
    const resolved = resolveConfig({}, join(operators, "kubeadm.yaml"));
    expect(resolved.config).toMatchObject({
      config: "/etc/kubernetes/manifests",
      anonymousAuth: false,
      authorizationMode: "Webhook",
      authenticationTokenWebhook: true,
      clientCaFile: "/etc/kubernetes/pki/ca.crt",
      cgroupDriver: "systemd",
      clusterDns: ["127.0.0.53"],
      clusterDomain: "cluster.local",
      syncFrequency: 10_000, // `syncFrequency: 0s` is unset, as Go's defaulting reads it
      verbosity: 1,
    });
    expect(resolved.fileFields.clientCaFile).toBe("authentication.x509.clientCAFile");
    const notes = resolved.notApplicable.map((n) => n.field);
    expect(notes).toContain("rotateCertificates");
    expect(notes).not.toContain("authentication.webhook.enabled"); // honoured: TokenReview to --kubeconfig's server
    expect(notes).not.toContain("nodeStatusUpdateFrequency"); // 0s: unset
  });

  test("the docs' reserved-resources file sets node allocatable, pids and pulls", () => {
    const { config, origins } = resolveConfig({}, join(operators, "reserved.yaml"));
    expect(config).toMatchObject({
      kubeReserved: { cpu: "100m", memory: "256Mi", "ephemeral-storage": "1Gi" },
      systemReserved: { cpu: "100m", memory: "128Mi" },
      evictionHard: { "memory.available": "200Mi" },
      enforceNodeAllocatable: ["pods"],
      podPidsLimit: 1024,
      maxPods: 60,
      serializeImagePulls: false,
      maxParallelImagePulls: 3,
    });
    expect(origins.podPidsLimit).toBe("file");
  });

  test("a hardened file loads with every field honoured or reported", () => {
    const resolved = resolveConfig({}, join(operators, "hardened.yaml"));
    expect(resolved.config).toMatchObject({ anonymousAuth: false, logFormat: "json", verbosity: 2 });
    const text = printConfig(resolved, { format: "yaml", showOrigin: true });
    expect(text).toContain("anonymous_auth: false  # file (authentication.anonymous.enabled)");
    expect(text).toContain("seccomp_default: true  # file (seccompDefault)");
    expect(text).toContain("eviction_soft: { memory.available: 300Mi }  # file (evictionSoft)");
    expect(text).toContain("eviction_soft_grace_period: { memory.available: 1m30s }  # file (evictionSoftGracePeriod)");
  });
});

describe("mistakes in the file", () => {
  test("a misspelt field names the file, the field and the closest real name", () => {
    const path = configFile("staticPodPth: /etc/kubernetes/manifests");
    expect(() => resolveConfig({}, path)).toThrow(
      `--config_file "${path}": unknown field "staticPodPth" (did you mean staticPodPath?)`,
    );
    expect(() => resolveConfig({}, configFile("authentication:\n  anonymous:\n    enabeld: false"))).toThrow(
      /unknown field "authentication.anonymous.enabeld" \(did you mean authentication.anonymous.enabled\?\)/,
    );
  });

  test("a value of the wrong type names the field and the expected type", () => {
    expect(() => resolveConfig({}, configFile("syncFrequency: 10"))).toThrow(
      /syncFrequency: expected a duration string such as "1m30s", got 10/,
    );
    expect(() => resolveConfig({}, configFile('cgroupsPerQOS: "yes"'))).toThrow(
      /cgroupsPerQOS: expected a boolean \(true or false\), got "yes"/,
    );
    expect(() => resolveConfig({}, configFile("kubeReserved:\n  cpu: 1"))).toThrow(
      /kubeReserved: expected a mapping of strings/,
    );
  });

  test("a bad value names the file's field, not the flag", () => {
    expect(() => resolveConfig({}, configFile("cgroupDriver: upstart"))).toThrow(
      /for cgroupDriver: expected one of cgroupfs, systemd/,
    );
  });

  test("values this kubelet cannot honour safely are refused with the reason", () => {
    expect(() => resolveConfig({}, configFile("enforceNodeAllocatable: [pods, system-reserved]"))).toThrow(
      /enforceNodeAllocatable: system-reserved: only pods and none are enforced here/,
    );
  });

  test("the resource managers' fields are honoured, reservedMemory as upstream's list", () => {
    const { config } = resolveConfig(
      {},
      configFile(
        [
          "cpuManagerPolicy: static",
          'reservedSystemCPUs: "0"',
          'cpuManagerPolicyOptions: {full-pcpus-only: "true"}',
          "cpuManagerReconcilePeriod: 5s",
          "memoryManagerPolicy: Static",
          "reservedMemory: [{numaNode: 0, limits: {memory: 1Gi}}]",
          "topologyManagerPolicy: single-numa-node",
          "topologyManagerScope: pod",
        ].join("\n"),
      ),
    );
    expect(config.cpuManagerPolicy).toBe("static");
    expect(config.reservedCpus).toBe("0");
    expect(config.cpuManagerPolicyOptions).toEqual({ "full-pcpus-only": "true" });
    expect(config.cpuManagerReconcilePeriod).toBe(5000);
    expect(config.reservedMemory).toEqual([{ numaNode: 0, limits: { memory: "1Gi" } }]);
    expect([config.memoryManagerPolicy, config.topologyManagerPolicy, config.topologyManagerScope]).toEqual([
      "Static",
      "single-numa-node",
      "pod",
    ]);
    expect(() => resolveConfig({ reservedCpus: "0-a" })).toThrow(
      '--reserved_cpus "0-a" (reservedSystemCPUs): strconv.Atoi: parsing "a": invalid syntax; give CPUs as 0,1 or 0-1',
    );
    expect(() => resolveConfig({}, configFile("topologyManagerPolicy: strict"))).toThrow(
      /for topologyManagerPolicy: expected one of none, best-effort, restricted, single-numa-node/,
    );
    expect(
      resolveConfig({ reservedMemory: "0:memory=1Gi,hugepages-2Mi=2Mi;1:memory=2Gi" }).config.reservedMemory,
    ).toEqual([
      { numaNode: 0, limits: { memory: "1Gi", "hugepages-2Mi": "2Mi" } },
      { numaNode: 1, limits: { memory: "2Gi" } },
    ]);
  });

  test("the TLS settings and protectKernelDefaults are honoured, curve IDs kept as strings", () => {
    const { config } = resolveConfig(
      {},
      configFile(
        "tlsMinVersion: VersionTLS13\ntlsCipherSuites: [TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256]\ntlsCurvePreferences: [23, X25519]\nprotectKernelDefaults: true",
      ),
    );
    expect(config.tlsMinVersion).toBe("VersionTLS13");
    expect(config.tlsCipherSuites).toEqual(["TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"]);
    expect(config.tlsCurvePreferences).toEqual(["23", "X25519"]);
    expect(config.protectKernelDefaults).toBe(true);
  });

  test("another kind of file is refused by kind", () => {
    const path = join(dir, "pod.yaml");
    writeFileSync(path, "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\n");
    expect(() => resolveConfig({}, path)).toThrow(/kind: Unsupported value: "Pod"/);
  });
});

describe("zero values and precedence", () => {
  test("an explicit zero of a pointer field is a value; of other fields it is unset", () => {
    const { config } = resolveConfig({}, configFile("healthzPort: 0\nmaxPods: 0\nregistryPullQPS: 0"));
    expect(config.healthzPort).toBe(0);
    expect(config.maxPods).toBe(110);
  });

  test("flags still win over the file", () => {
    const { config, origins } = resolveConfig(
      { maxPods: "5", clusterDns: "127.0.0.9" },
      join(operators, "reserved.yaml"),
    );
    expect(config.maxPods).toBe(5);
    expect(config.clusterDns).toEqual(["127.0.0.9"]);
    expect(origins.maxPods).toBe("flag");
  });
});

describe("the table", () => {
  test("gives every field exactly one verdict", () => {
    for (const row of KUBELET_CONFIGURATION) {
      const verdicts = [row.key !== undefined, row.notApplicable !== undefined, row.type === "object"];
      expect({ path: row.path, count: verdicts.filter(Boolean).length }).toEqual({ path: row.path, count: 1 });
      expect(verdictOf(row)).toBeDefined();
    }
  });

  test("holds the fields of kubelet.config.k8s.io/v1beta1 that operators' files use", () => {
    const paths = new Set(KUBELET_CONFIGURATION.map((r) => r.path));
    for (const field of [
      "authentication.x509.clientCAFile",
      "authorization.mode",
      "cgroupDriver",
      "clusterDNS",
      "evictionHard",
      "containerRuntimeEndpoint",
      "featureGates",
      "shutdownGracePeriodByPodPriority",
      "userNamespaces.idsPerPod",
    ])
      expect(paths.has(field)).toBe(true);
    expect(paths.size).toBeGreaterThan(130);
  });
});
