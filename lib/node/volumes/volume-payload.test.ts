import { describe, expect, test } from "bun:test";
import type { ConfigLookup, ConfigObject } from "../../api/config-objects.ts";
import type { V1Volume } from "../../api/types.ts";
import { testConfig, testPod } from "../../testing/pods.ts";
import { volumePayload } from "./volume-payload.ts";

const NODE = { cpus: 2, memoryBytes: 2 ** 30 };
const lookup = (...objects: ConfigObject[]): ConfigLookup => ({
  get: (kind, namespace, name) =>
    objects.find((o) => o.kind === kind && o.metadata.namespace === namespace && o.metadata.name === name),
});
const settings = testConfig("ConfigMap", "settings", { data: { mode: "fast", "app.conf": "x=1\n" } });
const token = testConfig("Secret", "token", { data: { token: Buffer.from("s3cr3t").toString("base64") } });
const payload = (volume: V1Volume, configs = lookup(settings, token)) => {
  const pod = testPod("p", { volumes: [volume] });
  pod.metadata.labels = { app: "web", tier: "front" };
  const files = volumePayload(pod, volume, configs, NODE);
  return Object.fromEntries([...files].map(([path, f]) => [path, `${f.data.toString("utf8")} ${f.mode.toString(8)}`]));
};

describe("volume payloads", () => {
  test("a configMap volume holds every key with mode 0644, or the items asked for with their modes", () => {
    expect(payload({ name: "v", configMap: { name: "settings" } })).toEqual({
      mode: "fast 644",
      "app.conf": "x=1\n 644",
    });
    expect(
      payload({
        name: "v",
        configMap: { name: "settings", defaultMode: 0o440, items: [{ key: "mode", path: "m/mode" }] },
      }),
    ).toEqual({ "m/mode": "fast 440" });
  });

  test("a secret volume decodes base64 and is owner-read-only by default", () => {
    expect(payload({ name: "v", secret: { secretName: "token" } })).toEqual({ token: "s3cr3t 400" });
  });

  test("a projected volume merges configMap, secret and the pod's labels", () => {
    expect(
      payload({
        name: "v",
        projected: {
          sources: [
            { configMap: { name: "settings", items: [{ key: "mode", path: "mode" }] } },
            { secret: { name: "token" } },
            { downwardAPI: { items: [{ path: "labels", fieldRef: { fieldPath: "metadata.labels" } }] } },
          ],
        },
      }),
    ).toEqual({ mode: "fast 644", token: "s3cr3t 400", labels: 'app="web"\ntier="front" 644' });
  });

  test("a missing object or key fails with the kubelet's message unless optional", () => {
    expect(() => payload({ name: "v", configMap: { name: "absent" } })).toThrow(
      'MountVolume.SetUp failed for volume "v" : configmap "absent" not found',
    );
    expect(() => payload({ name: "v", configMap: { name: "settings", items: [{ key: "nope", path: "n" }] } })).toThrow(
      "configmap references non-existent config key: nope",
    );
    expect(() => payload({ name: "v", secret: { secretName: "absent" } })).toThrow('secret "absent" not found');
    expect(payload({ name: "v", configMap: { name: "absent", optional: true } })).toEqual({});
  });
});
