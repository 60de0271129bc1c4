import { afterEach, expect, test } from "bun:test";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startTestDevicePlugin, type TestDevicePlugin } from "../../../testing/test-device-plugin.ts";
import type { PluginDevice } from "./deviceplugin-schema.ts";
import { connectPlugin } from "./endpoint.ts";

let plugin: TestDevicePlugin | undefined;
afterEach(() => plugin?.stop());

test("a plugin is dialled on its socket and answers options, ListAndWatch, preferred allocation, Allocate and PreStartContainer", async () => {
  const dir = mkdtempSync(join(tmpdir(), "dm-endpoint-"));
  plugin = await startTestDevicePlugin({
    dir,
    resource: "example.com/widget",
    count: 3,
    file: "/etc/hostname",
    preStartRequired: true,
    preferHighest: true,
    numaNodes: [0, 0, 1],
  });
  const endpoint = await connectPlugin("example.com/widget", join(dir, "widget.sock"));
  expect(endpoint.options).toEqual({ pre_start_required: true, get_preferred_allocation_available: true });
  const lists: PluginDevice[][] = [];
  const ended = endpoint.watch((devices) => lists.push(devices));
  while (lists.length === 0) await new Promise((r) => setTimeout(r, 10));
  expect(lists[0]).toEqual([
    { ID: "widget-0", health: "Healthy", topology: { nodes: [{ ID: 0 }] } },
    { ID: "widget-1", health: "Healthy", topology: { nodes: [{ ID: 0 }] } },
    { ID: "widget-2", health: "Healthy", topology: { nodes: [{ ID: 1 }] } },
  ]);
  plugin.setHealth("widget-1", "Unhealthy");
  while (lists.length === 1) await new Promise((r) => setTimeout(r, 10));
  expect(lists[1]![1]!.health).toBe("Unhealthy");
  expect(await endpoint.getPreferredAllocation(["widget-0", "widget-2"], [], 1)).toEqual(["widget-2"]);
  expect(await endpoint.allocate(["widget-2"])).toEqual({
    envs: { WIDGET_IDS: "widget-2" },
    mounts: [{ container_path: "/run/widget", host_path: "/etc/hostname", read_only: true }],
    devices: [{ container_path: "/dev/widget-2", host_path: "/dev/null", permissions: "rw" }],
    annotations: { "example.com/widget": "widget-2" },
    cdi_devices: [],
  });
  await endpoint.preStartContainer(["widget-2"]);
  expect(plugin.calls).toEqual([
    "GetPreferredAllocation widget-0,widget-2",
    "Allocate widget-2",
    "PreStartContainer widget-2",
  ]);
  // The plugin going away ends the stream: the manager then marks its devices unhealthy.
  await plugin.stop();
  plugin = undefined;
  await ended.catch(() => {});
  endpoint.close();
});

test("a socket with no plugin behind it is refused naming the options call", async () => {
  const dir = mkdtempSync(join(tmpdir(), "dm-endpoint-"));
  const started = Date.now();
  await expect(connectPlugin("example.com/widget", join(dir, "none.sock"))).rejects.toThrow(
    /^failed to get device plugin options: /,
  );
  expect(Date.now() - started).toBeLessThan(15_000);
}, 20_000);
