// What the CRI runtime costs in runtime.v1 calls, counted on a recording fake client: the idle kubelet's
// CPU on the CRI is mostly these calls (issue 16), so a change that adds calls per container shows here.
import { expect, test } from "bun:test";
import { createFakeCriClient } from "../../testing/fake-cri-client.ts";
import { testContainerConfig, testSandboxConfig } from "../../testing/cri-configs.ts";
import { FakeClock } from "../../testing/fake-clock.ts";
import { createCriRuntime } from "./cri.ts";
import { runtimeError, type RuntimeEvent } from "../runtime.ts";

async function nodeWithPods(count: number) {
  const client = createFakeCriClient();
  const clock = new FakeClock();
  const runtime = createCriRuntime(client, { relistPeriodMs: 1000, clock });
  const apps: string[] = [];
  for (let i = 0; i < count; i++) {
    const sandbox = testSandboxConfig(`uid-${i}`, `pod-${i}`);
    const sandboxId = await runtime.runPodSandbox(sandbox);
    const app = await runtime.createContainer(
      sandboxId,
      testContainerConfig(sandbox, "app", 0, "busybox", ["sleep"]),
      sandbox,
    );
    await runtime.startContainer(app);
    apps.push(app);
  }
  client.calls.length = 0;
  return { client, clock, runtime, apps };
}

const count = (calls: string[]) =>
  calls.reduce<Record<string, number>>((n, method) => ({ ...n, [method]: (n[method] ?? 0) + 1 }), {});

test("without the event stream (one GetContainerEvents, Unimplemented), each relist is one ListPodSandbox and one ListContainers, however many pods run", async () => {
  const { client, clock, runtime, apps } = await nodeWithPods(50);
  const abort = new AbortController();
  const seen: RuntimeEvent[] = [];
  const consuming = (async () => {
    for await (const event of runtime.events(abort.signal)) seen.push(event);
  })();
  await clock.advance(0);
  client.setState(apps[7]!, "CONTAINER_EXITED");
  for (let tick = 0; tick < 5; tick++) await clock.advance(1000);
  abort.abort();
  await consuming;
  expect(seen.map((e) => [e.type, e.containerId])).toEqual([["ContainerDied", apps[7]!]]);
  expect(count(client.calls)).toEqual({ GetContainerEvents: 1, ListPodSandbox: 6, ListContainers: 6 });
});

test("stats of every running container asked together are one ListContainerStats call", async () => {
  const { client, runtime, apps } = await nodeWithPods(20);
  const stats = await Promise.all(apps.map((id) => runtime.stats(id)));
  expect(count(client.calls)).toEqual({ ListContainerStats: 1 });
  expect(stats.map((s) => s.cpuUsageNanoseconds)).toEqual(apps.map((_, i) => 1000 * (i + 1)));
  expect(stats[3]!.memoryWorkingSetBytes).toBe(4096 * 4);
});

test("one container's stats alone are asked by its id, and a container with none is NotFound", async () => {
  const { client, runtime, apps } = await nodeWithPods(3);
  expect((await runtime.stats(apps[1]!)).cpuUsageNanoseconds).toBe(2000);
  client.setState(apps[2]!, "CONTAINER_EXITED");
  const [running, exited] = await Promise.allSettled([runtime.stats(apps[0]!), runtime.stats(apps[2]!)]);
  expect(running).toMatchObject({ status: "fulfilled", value: { cpuUsageNanoseconds: 1000 } });
  expect(exited).toMatchObject({ status: "rejected", reason: { code: "NotFound" } });
  expect(await runtime.stats("gone").catch((e) => e.code)).toBe("NotFound");
  expect(client.calls).toEqual(["ListContainerStats by id", "ListContainerStats", "ListContainerStats by id"]);
});

test("containers listed with their size take each writable layer's usage from one ListContainerStats", async () => {
  const { client, runtime, apps } = await nodeWithPods(3);
  client.setState(apps[2]!, "CONTAINER_EXITED");
  const listed = await runtime.listContainers({ size: true });
  expect(listed.map((c) => [c.id, c.sizeRwBytes])).toEqual([
    [apps[0]!, 8192],
    [apps[1]!, 8192 * 2],
    [apps[2]!, undefined], // an exited container has no stats, so no size
  ]);
  expect(count(client.calls)).toEqual({ ListContainers: 1, ListContainerStats: 1 });
  client.calls.length = 0;
  expect((await runtime.listContainers()).every((c) => c.sizeRwBytes === undefined)).toBe(true);
  expect(client.calls).toEqual(["ListContainers"]);
});

test("one pod from nothing is Version, RunPodSandbox, PodSandboxStatus, CreateContainer and StartContainer, nothing more", async () => {
  const client = createFakeCriClient();
  const runtime = createCriRuntime(client, { clock: new FakeClock() });
  await runtime.version();
  const sandbox = testSandboxConfig("uid-1", "pod-1");
  const sandboxId = await runtime.runPodSandbox(sandbox);
  expect((await runtime.podSandboxStatus(sandboxId)).runtimeName).toBe("fake");
  const app = await runtime.createContainer(
    sandboxId,
    testContainerConfig(sandbox, "app", 0, "busybox", ["sleep"]),
    sandbox,
  );
  await runtime.startContainer(app);
  expect(client.calls).toEqual(["Version", "RunPodSandbox", "PodSandboxStatus", "CreateContainer", "StartContainer"]);
});

test("a sandbox containerd cannot create for want of its sandbox image names the operator doc; other failures pass as they are", async () => {
  const failing = (message: string) => {
    const client = createFakeCriClient();
    return createCriRuntime(
      { ...client, runPodSandbox: () => Promise.reject(runtimeError("RuntimeError", message)) },
      { clock: new FakeClock() },
    );
  };
  const noPause =
    'cannot RunPodSandbox: failed to get sandbox image "registry.k8s.io/pause:3.8": failed to pull image "registry.k8s.io/pause:3.8": failed to pull and unpack image "registry.k8s.io/pause:3.8": failed to resolve reference "registry.k8s.io/pause:3.8": failed to do request: Head "https://registry.k8s.io/v2/pause/manifests/3.8": dial tcp: lookup registry.k8s.io on 10.0.0.2:53: no such host';
  const sandbox = testSandboxConfig("uid-1", "pod-1");
  const noImage = await failing(noPause)
    .runPodSandbox(sandbox)
    .catch((e: Error & { code: string }) => e);
  expect(noImage).toMatchObject({
    code: "RuntimeError",
    message: `${noPause}; see "Air-gapped nodes" in docs/operations.md`,
  });
  const other = await failing("cannot RunPodSandbox: failed to setup network for sandbox")
    .runPodSandbox(sandbox)
    .catch((e: Error) => e);
  expect(other).toMatchObject({ message: "cannot RunPodSandbox: failed to setup network for sandbox" });
});

test("each relist's two lists count in kubelet_runtime_operations_* as upstream's generic PLEG's GetPods does", async () => {
  const client = createFakeCriClient();
  const clock = new FakeClock();
  const operations: string[] = [];
  const runtime = createCriRuntime(client, {
    relistPeriodMs: 1000,
    clock,
    runtimeOperation: (operation, seconds, failed) => void operations.push(`${operation} ${seconds >= 0} ${failed}`),
  });
  const abort = new AbortController();
  const consuming = (async () => {
    for await (const _ of runtime.events(abort.signal));
  })();
  await clock.advance(0);
  await clock.advance(1000);
  abort.abort();
  await consuming;
  expect(operations.sort()).toEqual([
    "list_containers true false",
    "list_containers true false",
    "list_podsandbox true false",
    "list_podsandbox true false",
  ]);
});
