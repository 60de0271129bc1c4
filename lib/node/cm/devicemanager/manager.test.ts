import { expect, test } from "bun:test";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Pod, V1Container } from "../../../api/types.ts";
import { silentLogger } from "../../../log.ts";
import { FakeClock } from "../../../testing/fake-clock.ts";
import { testPod } from "../../../testing/pods.ts";
import { CHECKPOINT_FILE } from "./checkpoint.ts";
import type { ContainerAllocateResponse, PluginDevice } from "./deviceplugin-schema.ts";
import { createDeviceManager, STOP_GRACE_MS, type PluginEndpoint, type RegisterRequest } from "./manager.ts";

const RESOURCE = "example.com/widget";

/** A hand-made plugin: its device list is pushed by the test, its stream ended by `end()`. */
function fakePlugin(
  ids: string[],
  options = { pre_start_required: false, get_preferred_allocation_available: false },
  numa: Record<string, number> = {},
) {
  const calls: string[] = [];
  let push: (devices: PluginDevice[]) => void = () => {};
  let end: () => void = () => {};
  const devices = (health = "Healthy") =>
    ids.map((ID) => ({ ID, health, topology: ID in numa ? { nodes: [{ ID: numa[ID]! }] } : null }));
  const endpoint: PluginEndpoint = {
    options,
    watch(onDevices) {
      push = onDevices;
      onDevices(devices());
      return new Promise<void>((resolve) => (end = resolve));
    },
    async getPreferredAllocation(available, _must, size) {
      calls.push(`preferred ${available.join(",")}`);
      return [...available].sort().reverse().slice(0, size);
    },
    async allocate(list): Promise<ContainerAllocateResponse> {
      calls.push(`allocate ${list.join(",")}`);
      return {
        envs: { WIDGET_IDS: list.join(",") },
        mounts: [{ container_path: "/run/widget", host_path: "/etc/hostname", read_only: true }],
        devices: list.map((id) => ({ container_path: `/dev/${id}`, host_path: "/dev/null", permissions: "rw" })),
        annotations: { [RESOURCE]: list.join(",") },
        cdi_devices: [{ name: "example.com/widget=all" }],
      };
    },
    async preStartContainer(list) {
      calls.push(`prestart ${list.join(",")}`);
    },
    close() {},
  };
  return { endpoint, calls, push: (h?: string) => push(devices(h)), end: () => end() };
}

async function setUp(plugin = fakePlugin(["w0", "w1"]), dir = mkdtempSync(join(tmpdir(), "dm-")), numaNodes = [0]) {
  const clock = new FakeClock();
  let register: (r: RegisterRequest) => Promise<void> = async () => {};
  const pods: Pod[] = [];
  const manager = createDeviceManager(
    { dir, clock, log: silentLogger, numaNodes },
    {
      connect: async () => plugin.endpoint,
      serve: async (_path, handler) => {
        register = handler;
        return async () => {};
      },
    },
  );
  await manager.start({ activePods: () => pods });
  const registerPlugin = () => register({ version: "v1beta1", endpoint: "widget.sock", resource_name: RESOURCE });
  return { manager, clock, dir, pods, plugin, registerPlugin };
}

function widgetPod(name: string, count: number): Pod {
  const pod = testPod(name, {
    containers: [
      { name: "app", image: "busybox", resources: { limits: { [RESOURCE]: String(count) } } } as V1Container,
    ],
  });
  pod.metadata.uid ||= `uid-${name}`;
  return pod;
}

test("a registered plugin's healthy devices are the node's capacity and allocatable", async () => {
  const { manager, registerPlugin } = await setUp();
  expect(manager.capacity().capacity).toEqual({});
  await registerPlugin();
  expect(manager.capacity()).toEqual({ capacity: { [RESOURCE]: "2" }, allocatable: { [RESOURCE]: "2" } });
});

test("a plugin of another API version or a non-extended resource name is refused in upstream's words", async () => {
  const { manager } = await setUp();
  let register!: (r: RegisterRequest) => Promise<void>;
  const other = createDeviceManager(
    { dir: mkdtempSync(join(tmpdir(), "dm-")), clock: new FakeClock(), log: silentLogger },
    { connect: async () => fakePlugin([]).endpoint, serve: async (_p, h) => ((register = h), async () => {}) },
  );
  await other.start({ activePods: () => [] });
  await expect(register({ version: "v1alpha", endpoint: "x.sock", resource_name: RESOURCE })).rejects.toThrow(
    'requested API version "v1alpha" is not supported by kubelet. Supported versions are ["v1beta1"]',
  );
  await expect(register({ version: "v1beta1", endpoint: "x.sock", resource_name: "widget" })).rejects.toThrow(
    'the ResourceName "widget" is invalid',
  );
  expect(manager.capacity().capacity).toEqual({});
});

test("a pod asking for more devices than are free is refused with UnexpectedAdmissionError", async () => {
  const { manager, pods, registerPlugin } = await setUp();
  await registerPlugin();
  const first = widgetPod("first", 1);
  pods.push(first);
  expect(manager.admit(first)).toBeUndefined();
  expect(manager.admit(widgetPod("greedy", 2))).toEqual({
    reason: "UnexpectedAdmissionError",
    message:
      "Allocate failed due to requested number of devices unavailable for example.com/widget. Requested: 2, Available: 1, which is unexpected",
  });
});

test("admitting the same pod again does not count its own devices twice", async () => {
  const { manager, pods, registerPlugin } = await setUp();
  await registerPlugin();
  const pod = widgetPod("both", 2);
  pods.push(pod);
  expect(manager.admit(pod)).toBeUndefined();
  expect(manager.admit(pod)).toBeUndefined();
});

test("a container gets the plugin's envs, mounts, devices, annotations and CDI names, and the checkpoint records them", async () => {
  const { manager, pods, dir, plugin, registerPlugin } = await setUp();
  await registerPlugin();
  const pod = widgetPod("one", 1);
  pods.push(pod);
  manager.admit(pod);
  const options = await manager.runContainerOptions(pod, pod.spec.containers[0]!);
  expect(plugin.calls).toEqual(["allocate w0"]);
  expect(options).toEqual({
    envs: [{ key: "WIDGET_IDS", value: "w0" }],
    mounts: [{ container_path: "/run/widget", host_path: "/etc/hostname", readonly: true }],
    devices: [{ container_path: "/dev/w0", host_path: "/dev/null", permissions: "rw" }],
    annotations: { [RESOURCE]: "w0" },
    cdiDevices: ["example.com/widget=all"],
  });
  // The container starting again uses the same devices without a second Allocate.
  await manager.runContainerOptions(pod, pod.spec.containers[0]!);
  expect(plugin.calls).toEqual(["allocate w0"]);
  const saved = JSON.parse(readFileSync(join(dir, CHECKPOINT_FILE), "utf8"));
  expect(saved.Data.PodDeviceEntries).toEqual([
    expect.objectContaining({
      PodUID: pod.metadata.uid,
      ContainerName: "app",
      ResourceName: RESOURCE,
      DeviceIDs: { "-1": ["w0"] },
    }),
  ]);
  expect(manager.containerDevices(pod.metadata.uid, "app")).toEqual([{ resource: RESOURCE, id: "w0", numaNodes: [] }]);
});

test("the plugin's preferred allocation is asked for and followed when it offers one", async () => {
  const plugin = fakePlugin(["w0", "w1", "w2"], { pre_start_required: true, get_preferred_allocation_available: true });
  const { manager, pods, registerPlugin } = await setUp(plugin);
  await registerPlugin();
  const pod = widgetPod("picky", 1);
  pods.push(pod);
  manager.admit(pod);
  await manager.runContainerOptions(pod, pod.spec.containers[0]!);
  expect(plugin.calls).toEqual(["preferred w0,w1,w2", "allocate w2", "prestart w2"]);
});

test("a restarted kubelet keeps the allocations of its checkpoint and lists the resource at zero until the plugin is back", async () => {
  const { manager, pods, dir, registerPlugin } = await setUp();
  await registerPlugin();
  const pod = widgetPod("kept", 1);
  pods.push(pod);
  manager.admit(pod);
  await manager.runContainerOptions(pod, pod.spec.containers[0]!);

  const again = await setUp(fakePlugin(["w0", "w1"]), dir);
  again.pods.push(pod);
  expect(again.manager.capacity()).toEqual({ capacity: { [RESOURCE]: "0" }, allocatable: { [RESOURCE]: "0" } });
  expect(again.manager.admit(pod)).toBeUndefined();
  expect(again.manager.containerDevices(pod.metadata.uid, "app")).toEqual([
    { resource: RESOURCE, id: "w0", numaNodes: [] },
  ]);
  await again.registerPlugin();
  const other = widgetPod("other", 2);
  expect(again.manager.admit(other)?.message).toContain("Requested: 2, Available: 1");
  expect((await again.manager.runContainerOptions(pod, pod.spec.containers[0]!))?.envs).toEqual([
    { key: "WIDGET_IDS", value: "w0" },
  ]);
  expect(again.plugin.calls).toEqual([]);
});

test("a plugin whose stream ends has its devices unhealthy: capacity kept, allocatable 0, removed after the grace period", async () => {
  const { manager, clock, plugin, registerPlugin } = await setUp();
  await registerPlugin();
  plugin.end();
  await new Promise((r) => setImmediate(r));
  expect(manager.capacity()).toEqual({ capacity: { [RESOURCE]: "2" }, allocatable: { [RESOURCE]: "0" } });
  await clock.advance(STOP_GRACE_MS);
  expect(manager.capacity()).toEqual({ capacity: { [RESOURCE]: "2" }, allocatable: { [RESOURCE]: "0" } });
  await clock.advance(1);
  expect(manager.capacity()).toEqual({ capacity: { [RESOURCE]: "0" }, allocatable: { [RESOURCE]: "0" } });
  expect(manager.admit(widgetPod("late", 1))).toEqual({
    reason: "OutOfexample.com/widget",
    message: "Node didn't have enough resource: example.com/widget, requested: 1, used: 0, capacity: 0",
  });
});

test("a device the plugin reports unhealthy leaves allocatable but stays in capacity", async () => {
  const { manager, plugin, registerPlugin } = await setUp();
  await registerPlugin();
  plugin.push("Unhealthy");
  expect(manager.capacity()).toEqual({ capacity: { [RESOURCE]: "2" }, allocatable: { [RESOURCE]: "0" } });
  expect(manager.admit(widgetPod("sick", 1))?.message).toBe(
    "Allocate failed due to no healthy devices present; cannot allocate unhealthy devices example.com/widget, which is unexpected",
  );
});

test("devices of pods no longer active are freed for the next pod", async () => {
  const { manager, pods, registerPlugin } = await setUp();
  await registerPlugin();
  const first = widgetPod("first", 2);
  pods.push(first);
  manager.admit(first);
  await manager.runContainerOptions(first, first.spec.containers[0]!);
  expect(manager.admit(widgetPod("second", 1))?.reason).toBe("UnexpectedAdmissionError");
  pods.length = 0;
  expect(manager.admit(widgetPod("second", 1))).toBeUndefined();
});

test("topology hints: each NUMA node holding a free device is a preferred hint; none for devices without topology", async () => {
  const plugin = fakePlugin(["w0", "w1"], undefined, { w0: 0, w1: 1 });
  const { manager, registerPlugin } = await setUp(plugin, undefined, [0, 1]);
  await registerPlugin();
  const pod = widgetPod("numa", 1);
  expect(manager.getTopologyHints(pod, pod.spec.containers[0]!)).toEqual({
    [RESOURCE]: [
      { nodes: [0], preferred: true },
      { nodes: [1], preferred: true },
      { nodes: [0, 1], preferred: false },
    ],
  });
  expect(manager.getPodTopologyHints(widgetPod("both", 2))).toEqual({
    [RESOURCE]: [{ nodes: [0, 1], preferred: true }],
  });
  const flat = await setUp();
  await flat.registerPlugin();
  expect(flat.manager.getTopologyHints(pod, pod.spec.containers[0]!)).toEqual({ [RESOURCE]: undefined });
});

test("the devices allocated follow the NUMA node the topology manager decided, before the plugin's preference", async () => {
  const allocated = async (preferred: boolean, node: number) => {
    const plugin = fakePlugin(
      ["w0", "w1"],
      { pre_start_required: false, get_preferred_allocation_available: preferred },
      { w0: 0, w1: 1 },
    );
    const { manager, pods, registerPlugin } = await setUp(plugin, undefined, [0, 1]);
    await registerPlugin();
    manager.setAffinityStore(() => [node]);
    const pod = widgetPod("aligned", 1);
    pods.push(pod);
    manager.admit(pod);
    await manager.runContainerOptions(pod, pod.spec.containers[0]!);
    return manager.containerDevices(pod.metadata.uid, "app");
  };
  // The plugin prefers its highest id (w1), free devices are otherwise taken in order (w0): the decided node wins.
  expect(await allocated(true, 0)).toEqual([{ resource: RESOURCE, id: "w0", numaNodes: [0] }]);
  expect(await allocated(false, 1)).toEqual([{ resource: RESOURCE, id: "w1", numaNodes: [1] }]);
});
