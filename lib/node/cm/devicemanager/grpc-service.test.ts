import { expect, test } from "bun:test";
import { DEVICE_PLUGIN_SCHEMA } from "./deviceplugin-schema.ts";
import { messageCodec, serviceDefinition } from "./grpc-service.ts";

test("each method gets the proto's path, and only a `stream` response streams", () => {
  const plugin = serviceDefinition(DEVICE_PLUGIN_SCHEMA, "v1beta1", "DevicePlugin");
  expect(Object.keys(plugin)).toEqual([
    "GetDevicePluginOptions",
    "ListAndWatch",
    "GetPreferredAllocation",
    "Allocate",
    "PreStartContainer",
  ]);
  expect(plugin.ListAndWatch!.path).toBe("/v1beta1.DevicePlugin/ListAndWatch");
  expect(plugin.ListAndWatch!.responseStream).toBe(true);
  expect(plugin.Allocate!.responseStream).toBe(false);
  expect(serviceDefinition(DEVICE_PLUGIN_SCHEMA, "v1beta1", "Registration").Register!.path).toBe(
    "/v1beta1.Registration/Register",
  );
});

test("a service the schema lacks is refused by name", () => {
  expect(() => serviceDefinition(DEVICE_PLUGIN_SCHEMA, "v1beta1", "Nope")).toThrow("v1beta1 has no service Nope");
});

test("a device list round-trips through the wire form with its NUMA topology", () => {
  const codec = messageCodec(DEVICE_PLUGIN_SCHEMA, "ListAndWatchResponse");
  const list = {
    devices: [
      { ID: "w0", health: "Healthy", topology: { nodes: [{ ID: 1 }] } },
      { ID: "w1", health: "Unhealthy", topology: null },
    ],
  };
  expect(codec.decode(codec.encode(list))).toEqual(list);
});
