// A device plugin for tests, written against deviceplugin v1beta1 only (the proto's names and paths): it serves
// DevicePlugin on its own socket in the kubelet's device-plugins directory, registers on kubelet.sock (again
// whenever the kubelet re-creates it), lists N fake devices on ListAndWatch, and answers Allocate with a real host
// file mounted read-only, /dev/null as a device node per device, an env var and an annotation naming the ids.
// Runs in-process (startTestDevicePlugin) or as its own process: `bun lib/testing/test-device-plugin.ts --dir D
// --resource example.com/widget --count 2 --file /path`, printing "registered" each time it registers.
import { existsSync, rmSync, watch } from "node:fs";
import { join } from "node:path";
import type * as GrpcTypes from "@grpc/grpc-js";
import { loadGrpc } from "../grpc.ts";
import { DEVICE_PLUGIN_SCHEMA } from "../node/cm/devicemanager/deviceplugin-schema.ts";
import { bindUnix, serviceDefinition } from "../node/cm/devicemanager/grpc-service.ts";

export interface TestDevicePluginOptions {
  /** The kubelet's <root_dir>/device-plugins. */
  dir: string;
  resource: string;
  count: number;
  /** Host file mounted at /run/widget in the container. */
  file: string;
  /** Socket file name in `dir`. */
  socket?: string;
  preStartRequired?: boolean;
  /** Answer GetPreferredAllocation with the highest ids first. */
  preferHighest?: boolean;
  /** CDI device names returned by Allocate (none unless given: a runtime refuses names it has no spec for). */
  cdiDevices?: string[];
  /** NUMA node per device index (none: no topology). */
  numaNodes?: number[];
  onRegistered?: () => void;
}

export interface TestDevicePlugin {
  /** Calls received, in order: "Allocate widget-0", "PreStartContainer widget-0", … */
  calls: string[];
  setHealth(id: string, health: "Healthy" | "Unhealthy"): void;
  /** Resolves after the next successful registration. */
  registered(): Promise<void>;
  stop(): Promise<void>;
}

export const deviceId = (i: number) => `widget-${i}`;

export async function startTestDevicePlugin(o: TestDevicePluginOptions): Promise<TestDevicePlugin> {
  const grpc = await loadGrpc();
  const socketName = o.socket ?? "widget.sock";
  const socketPath = join(o.dir, socketName);
  const calls: string[] = [];
  const health = new Map(Array.from({ length: o.count }, (_, i) => [deviceId(i), "Healthy"]));
  const watchers = new Set<GrpcTypes.ServerWritableStream<object, object>>();
  let waiting: Array<() => void> = [];
  const devices = () =>
    [...health].map(([ID, h], i) => ({
      ID,
      health: h,
      topology: o.numaNodes?.[i] !== undefined ? { nodes: [{ ID: o.numaNodes[i] }] } : null,
    }));
  const publish = () => {
    for (const w of watchers) w.write({ devices: devices() });
  };
  let server: GrpcTypes.Server | undefined;
  const serve = async () => {
    server?.forceShutdown();
    for (const w of watchers) w.end();
    watchers.clear();
    server = new grpc.Server();
    server.addService(serviceDefinition(DEVICE_PLUGIN_SCHEMA, "v1beta1", "DevicePlugin"), {
      GetDevicePluginOptions: (_call: unknown, cb: (e: null, r: object) => void) =>
        cb(null, {
          pre_start_required: o.preStartRequired ?? false,
          get_preferred_allocation_available: o.preferHighest ?? false,
        }),
      ListAndWatch: (call: GrpcTypes.ServerWritableStream<object, object>) => {
        watchers.add(call);
        call.on("cancelled", () => watchers.delete(call));
        call.write({ devices: devices() });
      },
      GetPreferredAllocation: (call: { request: any }, cb: (e: null, r: object) => void) => {
        const r = call.request.container_requests[0];
        calls.push(`GetPreferredAllocation ${r.available_deviceIDs.join(",")}`);
        const ids = [...r.available_deviceIDs].sort().reverse().slice(0, r.allocation_size);
        cb(null, { container_responses: [{ deviceIDs: ids }] });
      },
      Allocate: (call: { request: any }, cb: (e: null, r: object) => void) => {
        const responses = call.request.container_requests.map((r: { devices_ids: string[] }) => {
          calls.push(`Allocate ${r.devices_ids.join(",")}`);
          return {
            envs: { WIDGET_IDS: r.devices_ids.join(",") },
            mounts: [{ container_path: "/run/widget", host_path: o.file, read_only: true }],
            devices: r.devices_ids.map((id) => ({
              container_path: `/dev/${id}`,
              host_path: "/dev/null",
              permissions: "rw",
            })),
            annotations: { [o.resource]: r.devices_ids.join(",") },
            cdi_devices: (o.cdiDevices ?? []).map((name) => ({ name })),
          };
        });
        cb(null, { container_responses: responses });
      },
      PreStartContainer: (call: { request: any }, cb: (e: null, r: object) => void) => {
        calls.push(`PreStartContainer ${call.request.devices_ids.join(",")}`);
        cb(null, {});
      },
    });
    rmSync(socketPath, { force: true });
    await bindUnix(grpc, server, socketPath);
  };
  const register = async () => {
    const Registration = grpc.makeGenericClientConstructor(
      serviceDefinition(DEVICE_PLUGIN_SCHEMA, "v1beta1", "Registration"),
      "Registration",
    );
    const client = new Registration(`unix://${join(o.dir, "kubelet.sock")}`, grpc.credentials.createInsecure()) as any;
    try {
      await new Promise<void>((resolve, reject) =>
        client.Register(
          {
            version: "v1beta1",
            endpoint: socketName,
            resource_name: o.resource,
            options: { pre_start_required: o.preStartRequired ?? false },
          },
          { deadline: Date.now() + 10_000, waitForReady: true },
          (error: Error | null) => (error ? reject(error) : resolve()),
        ),
      );
    } finally {
      client.close();
    }
    o.onRegistered?.();
    for (const w of waiting) w();
    waiting = [];
  };
  const again = async () => {
    await serve();
    await register();
  };
  // A kubelet that starts removes the plugins' sockets and makes kubelet.sock anew: serve again, register again.
  let busy: Promise<void> = Promise.resolve();
  const watcher = watch(o.dir, (_event, name) => {
    if (name === "kubelet.sock" && existsSync(join(o.dir, "kubelet.sock")))
      busy = busy
        .then(() => new Promise((r) => setTimeout(r, 200)))
        .then(again)
        .catch(() => {});
  });
  await serve();
  if (existsSync(join(o.dir, "kubelet.sock"))) await register();
  return {
    calls,
    setHealth(id, h) {
      health.set(id, h);
      publish();
    },
    registered: () => new Promise<void>((resolve) => waiting.push(resolve)),
    async stop() {
      watcher.close();
      for (const w of watchers) w.end();
      server?.forceShutdown();
      rmSync(socketPath, { force: true });
    },
  };
}

if (import.meta.main) {
  const args = process.argv.slice(2);
  const flag = (name: string) => {
    const at = args.indexOf(`--${name}`);
    if (at < 0 || !args[at + 1]) throw new Error(`test-device-plugin: --${name} is required`);
    return args[at + 1]!;
  };
  const plugin = await startTestDevicePlugin({
    dir: flag("dir"),
    resource: flag("resource"),
    count: Number(flag("count")),
    file: flag("file"),
    onRegistered: () => console.log("registered"),
  });
  console.log("serving");
  for (const signal of ["SIGTERM", "SIGINT"] as const)
    process.on(signal, () => void plugin.stop().then(() => process.exit(0)));
}
