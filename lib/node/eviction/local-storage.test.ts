import { expect, test } from "bun:test";
import { testPod } from "../../testing/pods.ts";
import type { V1Container } from "../../api/types.ts";
import type { StatsSummary } from "../stats/stats-analyzer.ts";
import {
  podStorageLimit,
  podStorageRequest,
  podStorageUse,
  storageLimitViolation,
  type PodStorageUse,
} from "./local-storage.ts";

const Mi = 2 ** 20;
const box = (name: string, limits?: Record<string, string>, requests?: Record<string, string>): V1Container => ({
  name,
  image: "local/busybox:latest",
  resources: { ...(limits ? { limits } : {}), ...(requests ? { requests } : {}) },
});
const use = (containers: Array<[string, number, number]>, volumes: Array<[string, number]> = []): PodStorageUse => ({
  containers: containers.map(([name, rootfsBytes, logsBytes]) => ({ name, rootfsBytes, logsBytes })),
  volumes: new Map(volumes),
});
const shared = { dedicatedImageFs: false };

test("a container whose writable layer and logs exceed its limit is named with the limit as written", () => {
  const pod = testPod("w", { containers: [box("writer", { "ephemeral-storage": "20Mi" }), box("quiet")] });
  expect(storageLimitViolation(pod, use([["writer", 18 * Mi, 2 * Mi]]), shared)).toBeUndefined();
  // A container without a limit has none of its own, but its use counts in the pod's total (upstream's sum).
  expect(storageLimitViolation(pod, use([["quiet", 500 * Mi, 0]]), shared)).toStartWith("Pod ephemeral");
  // One container only: the pod-level sum is 20Mi too, and the pod is over it first, as upstream checks.
  expect(storageLimitViolation(pod, use([["writer", 60 * Mi, 1]]), shared)).toBe(
    "Pod ephemeral local storage usage exceeds the total limit of containers 20Mi. ",
  );
});

test("a container over its own limit while the pod is within the sum is evicted with the container's message", () => {
  const pod = testPod("two", {
    containers: [box("a", { "ephemeral-storage": "20Mi" }), box("b", { "ephemeral-storage": "100Mi" })],
  });
  expect(storageLimitViolation(pod, use([["a", 30 * Mi, 0]]), shared)).toBe(
    'Container a exceeded its local ephemeral storage limit "20Mi". ',
  );
  expect(
    storageLimitViolation(
      pod,
      use(
        [
          ["a", 10 * Mi, 0],
          ["b", 90 * Mi, 0],
        ],
        [["cache", 30 * Mi]],
      ),
      shared,
    ),
  ).toBe("Pod ephemeral local storage usage exceeds the total limit of containers 120Mi. ");
});

test("with a dedicated image filesystem only a container's logs count against its limit", () => {
  const pod = testPod("w", {
    containers: [box("writer", { "ephemeral-storage": "20Mi" }), box("big", { "ephemeral-storage": "1Gi" })],
  });
  const written = use([["writer", 60 * Mi, 0]]);
  expect(storageLimitViolation(pod, written, { dedicatedImageFs: true })).toBeUndefined();
  expect(storageLimitViolation(pod, written, shared)).toBe(
    'Container writer exceeded its local ephemeral storage limit "20Mi". ',
  );
  expect(storageLimitViolation(pod, use([["writer", 0, 21 * Mi]]), { dedicatedImageFs: true })).toBe(
    'Container writer exceeded its local ephemeral storage limit "20Mi". ',
  );
});

test("the pod's limit is its containers' and sidecars' sum or a larger init container's; none without limits", () => {
  expect(podStorageLimit(testPod("none", { containers: [box("a")] }))).toBeUndefined();
  const pod = testPod("init", {
    initContainers: [
      box("setup", { "ephemeral-storage": "1Gi" }),
      { ...box("side", { "ephemeral-storage": "10Mi" }), restartPolicy: "Always" } as V1Container,
    ],
    containers: [box("a", { "ephemeral-storage": "20Mi" })],
  });
  expect(podStorageLimit(pod)).toEqual({ bytes: 2 ** 30, text: "1Gi" });
  pod.spec.initContainers![0]!.resources = { limits: { "ephemeral-storage": "5Mi" } };
  expect(podStorageLimit(pod)).toEqual({ bytes: 30 * Mi, text: "30Mi" });
});

test("the pod's request sums its containers' requests, a limit without a request counting as one", () => {
  const pod = testPod("req", {
    containers: [box("a", undefined, { "ephemeral-storage": "1Gi" }), box("b", { "ephemeral-storage": "512Mi" })],
  });
  expect(podStorageRequest(pod)).toBe(1.5 * 2 ** 30);
  expect(podStorageRequest(testPod("none", {}))).toBe(0);
});

test("the summary's rootfs, logs and volumes are each pod's use", () => {
  const summary = {
    pods: [
      {
        podRef: { name: "p", namespace: "default", uid: "u1" },
        containers: [{ name: "a", rootfs: { usedBytes: 5 }, logs: { usedBytes: 7 } }, { name: "b" }],
        volume: [{ name: "cache", usedBytes: 11 }],
      },
    ],
  } as unknown as StatsSummary;
  expect(podStorageUse(summary).get("u1")).toEqual(
    use(
      [
        ["a", 5, 7],
        ["b", 0, 0],
      ],
      [["cache", 11]],
    ),
  );
  expect(podStorageUse(undefined).size).toBe(0);
});
