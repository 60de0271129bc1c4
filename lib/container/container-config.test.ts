import { describe, expect, test } from "bun:test";
import type { ConfigLookup, ConfigObject } from "../api/config-objects.ts";
import type { V1Container } from "../api/types.ts";
import { testConfig, testPod } from "../testing/pods.ts";
import { resolveEnv, type PodContext } from "./container-config.ts";

const objects: ConfigObject[] = [
  testConfig("ConfigMap", "settings", { data: { mode: "fast", "bad key": "x", "log.level": "info" } }),
  testConfig("Secret", "token", { data: { token: Buffer.from("s3cr3t").toString("base64") } }),
];
const configs: ConfigLookup = {
  get: (kind, namespace, name) =>
    objects.find((o) => o.kind === kind && o.metadata.namespace === namespace && o.metadata.name === name),
};
const ctx = {
  nodeName: "n",
  hostIP: "",
  podIP: "",
  node: { cpus: 1, memoryBytes: 0 },
  configs,
} as unknown as PodContext;
const env = (container: Partial<V1Container>) => {
  const c = { name: "app", image: "busybox", ...container } as V1Container;
  return Object.fromEntries(resolveEnv(testPod("p", { containers: [c] }), c, ctx));
};

describe("environment from ConfigMaps and Secrets", () => {
  test("envFrom comes first with its prefix, skipping keys that are no variable names; env overrides it", () => {
    expect(
      env({
        envFrom: [{ prefix: "CFG_", configMapRef: { name: "settings" } }, { secretRef: { name: "token" } }],
        env: [{ name: "CFG_mode", value: "slow" }],
      }),
    ).toEqual({ CFG_mode: "slow", "CFG_log.level": "info", token: "s3cr3t" });
  });

  test("key references read the value; optional ones are skipped when the object or key is missing", () => {
    expect(
      env({
        env: [
          { name: "MODE", valueFrom: { configMapKeyRef: { name: "settings", key: "mode" } } },
          { name: "TOKEN", valueFrom: { secretKeyRef: { name: "token", key: "token" } } },
          { name: "A", valueFrom: { configMapKeyRef: { name: "absent", key: "k", optional: true } } },
          { name: "B", valueFrom: { configMapKeyRef: { name: "settings", key: "nope", optional: true } } },
        ],
      }),
    ).toEqual({ MODE: "fast", TOKEN: "s3cr3t" });
  });

  test("a missing object or key that is not optional fails with the kubelet's message", () => {
    expect(() => env({ envFrom: [{ configMapRef: { name: "absent" } }] })).toThrow('configmap "absent" not found');
    expect(() => env({ env: [{ name: "X", valueFrom: { secretKeyRef: { name: "token", key: "nope" } } }] })).toThrow(
      "couldn't find key nope in Secret default/token",
    );
  });
});
