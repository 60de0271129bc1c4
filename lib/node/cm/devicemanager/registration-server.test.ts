import { afterEach, expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadGrpc } from "../../../grpc.ts";
import { silentLogger } from "../../../log.ts";
import { FakeClock } from "../../../testing/fake-clock.ts";
import { startTestDevicePlugin, type TestDevicePlugin } from "../../../testing/test-device-plugin.ts";
import { DEVICE_PLUGIN_SCHEMA } from "./deviceplugin-schema.ts";
import { connectPlugin } from "./endpoint.ts";
import { serviceDefinition } from "./grpc-service.ts";
import { createDeviceManager } from "./manager.ts";
import { serveRegistration } from "./registration-server.ts";

const stops: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const stop of stops.splice(0)) await stop();
});

async function kubeletSide(dir: string) {
  const manager = createDeviceManager(
    { dir, clock: new FakeClock(), log: silentLogger },
    { connect: connectPlugin, serve: serveRegistration },
  );
  await manager.start({ activePods: () => [] });
  stops.push(() => manager.stop());
  return manager;
}

const until = async (ok: () => boolean) => {
  for (let i = 0; i < 500 && !ok(); i++) await new Promise((r) => setTimeout(r, 10));
};

test("a plugin registering on kubelet.sock becomes the node's extended resource, and its leaving marks it unhealthy", async () => {
  const dir = mkdtempSync(join(tmpdir(), "dm-reg-"));
  const manager = await kubeletSide(dir);
  const plugin: TestDevicePlugin = await startTestDevicePlugin({
    dir,
    resource: "example.com/widget",
    count: 2,
    file: "/etc/hostname",
  });
  stops.push(() => plugin.stop());
  await until(() => manager.capacity().allocatable["example.com/widget"] === "2");
  expect(manager.capacity()).toEqual({
    capacity: { "example.com/widget": "2" },
    allocatable: { "example.com/widget": "2" },
  });
  await plugin.stop();
  await until(() => manager.capacity().allocatable["example.com/widget"] === "0");
  expect(manager.capacity()).toEqual({
    capacity: { "example.com/widget": "2" },
    allocatable: { "example.com/widget": "0" },
  });
});

test("a registration of an unsupported version gets upstream's error back over gRPC", async () => {
  const dir = mkdtempSync(join(tmpdir(), "dm-reg-"));
  await kubeletSide(dir);
  const grpc = await loadGrpc();
  const Registration = grpc.makeGenericClientConstructor(
    serviceDefinition(DEVICE_PLUGIN_SCHEMA, "v1beta1", "Registration"),
    "Registration",
  );
  const client = new Registration(`unix://${join(dir, "kubelet.sock")}`, grpc.credentials.createInsecure()) as any;
  const error = await new Promise<any>((resolve) =>
    client.Register({ version: "v1alpha1", endpoint: "x.sock", resource_name: "example.com/x" }, (e: unknown) =>
      resolve(e),
    ),
  );
  client.close();
  expect(error.details).toBe(
    'requested API version "v1alpha1" is not supported by kubelet. Supported versions are ["v1beta1"]',
  );
});

test("the kubelet starting removes stale plugin sockets but keeps its checkpoint", async () => {
  const dir = mkdtempSync(join(tmpdir(), "dm-reg-"));
  const first = await kubeletSide(dir);
  const plugin = await startTestDevicePlugin({ dir, resource: "example.com/widget", count: 1, file: "/etc/hostname" });
  stops.push(() => plugin.stop());
  await until(() => first.capacity().allocatable["example.com/widget"] === "1");
  writeFileSync(join(dir, "notes.txt"), "kept");
  // A socket left by a plugin that died with the old kubelet (a bound, never unlinked unix socket).
  const stale = join(dir, "stale.sock");
  spawnSync("python3", ["-c", `import socket; socket.socket(socket.AF_UNIX).bind(${JSON.stringify(stale)})`]);
  expect(existsSync(stale)).toBe(true);
  await first.stop();
  const again = plugin.registered();
  const second = await kubeletSide(dir);
  // The plugin saw kubelet.sock made anew, served again and registered again.
  await again;
  await until(() => second.capacity().allocatable["example.com/widget"] === "1");
  expect(second.capacity().allocatable).toEqual({ "example.com/widget": "1" });
  expect(existsSync(join(dir, "kubelet_internal_checkpoint"))).toBe(true);
  expect(existsSync(join(dir, "notes.txt"))).toBe(true);
  expect(existsSync(stale)).toBe(false);
});
