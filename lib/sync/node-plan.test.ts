import { describe, expect, test } from "bun:test";
import { noConfigs, type ConfigLookup } from "../api/config-objects.ts";
import type { Pod, V1PodSpec } from "../api/types.ts";
import { containerConfig, podSandboxConfig, type PodContext } from "../container/container-config.ts";
import { LABEL } from "../container/runtime.ts";
import { FakeRuntime } from "../testing/fake-runtime.ts";
import { testConfig, testPod } from "../testing/pods.ts";
import { planNode, type NodePlan } from "./node-plan.ts";
import { noneObserved, type Observed } from "./pod-plan.ts";
import type { BackoffEntry } from "../node/flowcontrol/backoff.ts";

const PAUSE = "registry.k8s.io/pause:3.9";
const ctx: PodContext = {
  nodeName: "node",
  hostIP: "",
  podIP: "",
  networkMode: "none",
  allowPrivileged: false,
  volumePaths: new Map(),
  node: { cpus: 2, memoryBytes: 0 },
  configs: noConfigs,
};
const spec = (over: Partial<V1PodSpec> = {}): Partial<V1PodSpec> => ({
  containers: [{ name: "app", image: "busybox:1.36", command: ["sleep", "3600"] }],
  ...over,
});

/** A node running `pods` exactly as the kubelet would have created them. */
async function nodeRunning(...pods: Pod[]): Promise<Map<string, Observed>> {
  const runtime = new FakeRuntime();
  for (const pod of pods) {
    const sandbox = podSandboxConfig(pod, ctx, 0);
    const sandboxId = await runtime.runPodSandbox(sandbox);
    for (const c of pod.spec.containers) {
      runtime.images.add(c.image!);
      await runtime.startContainer(
        await runtime.createContainer(sandboxId, containerConfig(pod, c, { ...ctx, attempt: 0, init: false }), sandbox),
      );
    }
  }
  const observed = new Map<string, Observed>();
  const of = (uid: string) => observed.get(uid) ?? observed.set(uid, noneObserved()).get(uid)!;
  for (const summary of await runtime.listPodSandboxes())
    of(summary.metadata.uid).sandboxes.push(await runtime.podSandboxStatus(summary.id));
  for (const summary of await runtime.listContainers())
    of(summary.labels[LABEL.podUid]!).containers.push(await runtime.inspectContainer(summary.id));
  return observed;
}

const plan = (
  pods: Pod[],
  observed: Map<string, Observed>,
  over: {
    present?: string[];
    configs?: ConfigLookup;
    unreadSources?: Set<string>;
    backoff?: Record<string, BackoffEntry>;
    now?: number;
    allocatable?: { milliCpu: number; memoryBytes: number };
  } = {},
): NodePlan =>
  planNode({
    pods,
    observed,
    networkMode: "none",
    sandboxImage: PAUSE,
    imagePresent: (image) => (over.present ?? [PAUSE, "busybox:1.36"]).includes(image),
    configs: over.configs ?? noConfigs,
    now: over.now ?? Date.now(),
    ...(over.unreadSources ? { unreadSources: over.unreadSources } : {}),
    ...(over.backoff ? { backoff: { get: (key: string) => over.backoff![key] } } : {}),
    ...(over.allocatable ? { allocatable: over.allocatable } : {}),
  });
const actions = (p: NodePlan) =>
  p.pods.flatMap((r) => r.actions.map((a) => `${r.pod} ${a.action} ${a.container ?? a.image ?? ""} | ${a.reason}`));

describe("node plan", () => {
  test("on an empty node: create the pod, its containers, and pull the images that are missing", () => {
    const result = plan([testPod("web", spec())], new Map(), { present: [] });
    expect(result.changes).toBe(true);
    expect(actions(result)).toEqual([
      "default/web create-pod  | not on the node",
      `default/web pull-image ${PAUSE} | not present (pull policy IfNotPresent)`,
      "default/web pull-image busybox:1.36 | not present (pull policy IfNotPresent)",
      "default/web start-container app | new",
    ]);
    expect(result.pulls).toEqual([PAUSE, "busybox:1.36"]);
  });

  test("on a converged node: no changes and no pod listed", async () => {
    const pod = testPod("web", spec());
    const result = plan([pod], await nodeRunning(pod));
    expect(result).toEqual({ changes: false, pods: [], pulls: [] });
  });

  test("a changed image and env replace the container, naming exactly those fields", async () => {
    const before = testPod("web", spec());
    const after = testPod(
      "web",
      spec({
        containers: [
          { name: "app", image: "busybox:1.37", command: ["sleep", "3600"], env: [{ name: "A", value: "b" }] },
        ],
      }),
    );
    const result = plan([after], await nodeRunning(before), { present: [PAUSE, "busybox:1.36", "busybox:1.37"] });
    expect(actions(result)).toEqual(["default/web replace-container app | spec changed: env, image"]);
    expect(result.pods[0]!.actions[0]!.fields).toEqual(["env", "image"]);
  });

  test("a pod-level change recreates the pod, naming the sandbox field", async () => {
    const before = testPod("web", spec());
    const result = plan([testPod("web", spec({ hostNetwork: true }))], await nodeRunning(before));
    expect(actions(result)[0]).toBe("default/web recreate-pod  | its sandbox changed: hostNetwork");
  });

  test("an orphan is removed, unless its source had a manifest that could not be read", async () => {
    const observed = await nodeRunning(testPod("old", spec()));
    expect(actions(plan([], observed))).toEqual([
      "default/old remove-pod  | no source wants it (2 running, 2 containers in all)",
    ]);
    expect(plan([], observed, { unreadSources: new Set(["file"]) })).toEqual({ changes: false, pods: [], pulls: [] });
  });

  test("a dead container backing off shows as waiting with the persisted back-off, and as a restart once it ended", async () => {
    const pod = testPod("web", spec());
    const now = Date.parse("2026-01-01T00:01:00Z");
    const observed = await nodeRunning(pod);
    const app = observed.get(pod.metadata.uid)!.containers[0]!;
    Object.assign(app, {
      running: false,
      state: "exited",
      exitCode: 1,
      startedAt: "2026-01-01T00:00:50Z",
      finishedAt: "2026-01-01T00:00:51Z",
    });
    const backoff = { [`${pod.metadata.uid}/app`]: { delayMs: 20_000, at: now - 5000 } };
    const waiting = plan([pod], observed, { backoff, now });
    expect(waiting.changes).toBe(false);
    expect(actions(waiting)).toEqual([
      `default/web wait app | CrashLoopBackOff: back-off 20s restarting failed container=app pod=web_default(${pod.metadata.uid}) (15s left)`,
    ]);
    expect(actions(plan([pod], observed, { backoff, now: now + 15_000 }))).toEqual([
      "default/web restart-container app | exited with code 1 (restartPolicy Always)",
    ]);
  });

  test("a start that would stop at a missing ConfigMap says so", () => {
    const pod = testPod("cfg", spec({ volumes: [{ name: "v", configMap: { name: "settings" } }] }));
    const missing = plan([pod], new Map());
    expect(actions(missing).at(-1)).toStartWith(
      'default/cfg wait  | spec.volumes[0].configMap.name: Not found: "settings"',
    );
    const settings = testConfig("ConfigMap", "settings", { data: { a: "1" } });
    const found = plan([pod], new Map(), { configs: { get: (kind) => (kind === "ConfigMap" ? settings : undefined) } });
    expect(actions(found).some((a) => a.includes(" wait "))).toBe(false);
  });
});

describe("node plan: in-place resize", () => {
  const sized = (cpu: string, memory: string, extra: Record<string, unknown> = {}) =>
    spec({
      containers: [
        {
          name: "app",
          image: "busybox:1.36",
          command: ["sleep", "3600"],
          resources: { limits: { cpu, memory } },
          ...extra,
        },
      ],
    });

  test("a resources-only edit shows as a resize of the same container, not a restart", async () => {
    const result = plan(
      [testPod("web", sized("500m", "64Mi"))],
      await nodeRunning(testPod("web", sized("200m", "32Mi"))),
    );
    expect(actions(result)).toEqual([
      "default/web resize-container app | in place, same container: cpu limit 200m → 500m, cpu request 200m → 500m, memory limit 33554432 → 67108864",
    ]);
  });

  test("under resizePolicy RestartContainer the same edit shows as a replacement", async () => {
    const policy = { resizePolicy: [{ resourceName: "memory", restartPolicy: "RestartContainer" }] };
    const result = plan(
      [testPod("web", sized("200m", "64Mi", policy))],
      await nodeRunning(testPod("web", sized("200m", "32Mi", policy))),
    );
    expect(actions(result)).toEqual(["default/web replace-container app | spec changed: resources"]);
  });

  const allocatable = { milliCpu: 1000, memoryBytes: 2 ** 33 };

  test("a resize that fits the node but not beside the other pods shows as Deferred, a wait, not a resize", async () => {
    const other = testPod("big", sized("600m", "32Mi"));
    const result = plan(
      [other, testPod("web", sized("500m", "32Mi"))],
      await nodeRunning(other, testPod("web", sized("300m", "32Mi"))),
      { allocatable },
    );
    expect(actions(result)).toEqual([
      "default/web wait app | resize Deferred (cpu limit 300m → 500m, cpu request 300m → 500m): Node didn't have enough resource: cpu, requested: 500, used: 600, capacity: 1000",
    ]);
    expect(result.changes).toBe(false);
  });

  test("a resize beyond the node's allocatable shows as Infeasible; one that fits beside the others as a resize", async () => {
    const other = testPod("big", sized("600m", "32Mi"));
    const running = await nodeRunning(other, testPod("web", sized("300m", "32Mi")));
    expect(actions(plan([other, testPod("web", sized("1500m", "32Mi"))], running, { allocatable }))).toEqual([
      "default/web wait app | resize Infeasible (cpu limit 300m → 1500m, cpu request 300m → 1500m): Node didn't have enough capacity: cpu, requested: 1500, capacity: 1000",
    ]);
    expect(actions(plan([other, testPod("web", sized("400m", "32Mi"))], running, { allocatable }))).toEqual([
      "default/web resize-container app | in place, same container: cpu limit 300m → 400m, cpu request 300m → 400m",
    ]);
  });

  test("a resize that needs a restart (RestartContainer) and does not fit shows as Deferred, not as a replacement", async () => {
    const policy = { resizePolicy: [{ resourceName: "cpu", restartPolicy: "RestartContainer" }] };
    const other = testPod("big", sized("600m", "32Mi"));
    const result = plan(
      [other, testPod("web", sized("500m", "32Mi", policy))],
      await nodeRunning(other, testPod("web", sized("300m", "32Mi", policy))),
      { allocatable },
    );
    expect(actions(result)).toEqual([
      "default/web wait app | resize Deferred (Container app resize requires restart): Node didn't have enough resource: cpu, requested: 500, used: 600, capacity: 1000",
    ]);
  });
});
