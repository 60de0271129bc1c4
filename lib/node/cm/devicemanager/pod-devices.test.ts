import { expect, test } from "bun:test";
import { DEVICE_PLUGIN_SCHEMA, type ContainerAllocateResponse } from "./deviceplugin-schema.ts";
import { createPodDevices } from "./pod-devices.ts";

const response = (over: Partial<ContainerAllocateResponse>): ContainerAllocateResponse => ({
  envs: {},
  mounts: [],
  devices: [],
  annotations: {},
  cdi_devices: [],
  ...over,
});

test("a container's options merge its resources in name order, the first setting of an env, path or annotation kept", () => {
  const pods = createPodDevices(DEVICE_PLUGIN_SCHEMA);
  pods.insert(
    "u",
    "app",
    "b.example.com/x",
    { "-1": ["x0"] },
    response({
      envs: { SHARED: "from-b", B: "1" },
      mounts: [{ container_path: "/lib/drv", host_path: "/opt/b", read_only: false }],
      devices: [{ container_path: "/dev/x0", host_path: "/dev/x0", permissions: "" }],
      cdi_devices: [{ name: "b.example.com/x=x0" }],
    }),
  );
  pods.insert(
    "u",
    "app",
    "a.example.com/y",
    { "0": ["y0"] },
    response({
      envs: { SHARED: "from-a" },
      mounts: [{ container_path: "/lib/drv", host_path: "/opt/a", read_only: true }],
      annotations: { note: "a" },
    }),
  );
  expect(pods.runContainerOptions("u", "app")).toEqual({
    envs: [
      { key: "SHARED", value: "from-a" },
      { key: "B", value: "1" },
    ],
    mounts: [{ container_path: "/lib/drv", host_path: "/opt/a", readonly: true }],
    devices: [{ container_path: "/dev/x0", host_path: "/dev/x0", permissions: "mrw" }],
    annotations: { note: "a" },
    cdiDevices: ["b.example.com/x=x0"],
  });
  expect(pods.runContainerOptions("u", "other")).toBeUndefined();
});

test("checkpoint entries carry the Allocate answer in its wire form and read back the same", () => {
  const pods = createPodDevices(DEVICE_PLUGIN_SCHEMA);
  pods.insert("u", "app", "example.com/w", { "-1": ["w0", "w1"] }, response({ envs: { W: "w0,w1" } }));
  const entries = pods.toCheckpoint();
  expect(entries).toEqual([
    {
      PodUID: "u",
      ContainerName: "app",
      ResourceName: "example.com/w",
      DeviceIDs: { "-1": ["w0", "w1"] },
      AllocResp: "CgoKAVcSBXcwLHcx",
    },
  ]);
  const back = createPodDevices(DEVICE_PLUGIN_SCHEMA);
  back.fromCheckpoint(entries);
  expect(back.containerDevices("u", "app", "example.com/w")).toEqual(new Set(["w0", "w1"]));
  expect(back.runContainerOptions("u", "app")?.envs).toEqual([{ key: "W", value: "w0,w1" }]);
  expect(back.devices()).toEqual(new Map([["example.com/w", new Set(["w0", "w1"])]]));
});

test("the AllocResp of a Go kubelet's checkpoint decodes to the plugin's env", () => {
  const pods = createPodDevices(DEVICE_PLUGIN_SCHEMA);
  pods.fromCheckpoint([
    {
      PodUID: "u",
      ContainerName: "check",
      ResourceName: "nvidia.com/gpu",
      DeviceIDs: { "-1": ["tegra"] },
      AllocResp: "Ch8KFk5WSURJQV9WSVNJQkxFX0RFVklDRVMSBXRlZ3Jh",
    },
  ]);
  expect(pods.runContainerOptions("u", "check")?.envs).toEqual([{ key: "NVIDIA_VISIBLE_DEVICES", value: "tegra" }]);
});
