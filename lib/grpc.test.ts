import { expect, test } from "bun:test";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { loadGrpc, serveUnixOnDemand } from "./grpc.ts";
import { describeWithServices } from "./testing/services.ts";
import { freePortNumber } from "./testing/ports.ts";

const root = resolve(import.meta.dir, "..");

/**
 * Counts of loaded CommonJS modules, in a fresh process (modules this test run already loaded do not count), after
 * each step: grpc-js, protobufjs and @grpc/proto-loader. The CRI client needs neither of the last two: its codecs are
 * built from generated tables (cri-schema.ts), where proto-loader's descriptor conversion and protobufjs's .proto
 * parsing cost the CRI path 40–70 ms of CPU at start. dockerode would require gRPC at load
 * for BuildKit sessions; patches/dockerode+*.patch (applied by npm's postinstall) defers that to a BuildKit build.
 */
const loadedAfter = (steps: string[]) => {
  const script = `
    const count = () => {
      const keys = Object.keys(require.cache);
      return {
        grpc: keys.filter((k) => k.includes("/@grpc/grpc-js/")).length,
        protobuf: keys.filter((k) => k.includes("/node_modules/protobufjs/")).length,
        protoLoader: keys.filter((k) => k.includes("/@grpc/proto-loader/")).length,
        dockerode: keys.filter((k) => k.includes("/node_modules/dockerode/")).length,
      };
    };
    const { main } = await import(${JSON.stringify(`${root}/lib/cli/cli.ts`)});
    const quiet = { write: () => true };
    const io = { stdout: quiet, stderr: quiet, readStdin: async () => "", exit() {} };
    const counts = [];
    ${steps.map((step) => `${step}; counts.push(count());`).join("\n")}
    console.log(JSON.stringify(counts));`;
  const run = Bun.spawnSync([process.execPath, "-e", script], { cwd: root, stderr: "pipe" });
  expect(run.stderr.toString()).toBe("");
  return JSON.parse(run.stdout.toString().trim().split("\n").pop()!) as Array<{
    grpc: number;
    protobuf: number;
    protoLoader: number;
    dockerode: number;
  }>;
};

test("kubelet --version, validate and the composition root load no gRPC nor dockerode; the CRI client loads none of grpc-js, protobufjs and proto-loader", () => {
  const [version, validate, composition, cri] = loadedAfter([
    `if ((await main(["--version"], io)) !== 0) throw new Error("--version failed")`,
    `if ((await main(["validate", "testdata/pods"], io)) !== 0) throw new Error("validate testdata/pods failed")`,
    // What `kubelet run` loads before it opens a runtime: the composition root and everything it imports statically.
    `await import("./lib/kubelet.ts")`,
    `await import("./lib/container/cri/cri-client.ts")`,
  ]);
  const none = { grpc: 0, protobuf: 0, protoLoader: 0, dockerode: 0 };
  expect(version).toEqual(none);
  expect(validate).toEqual(none);
  expect(composition).toEqual(none);
  // Its calls go over node:http2 directly (lib/container/cri/grpc-h2.ts).
  expect(cri!.grpc).toBe(0);
  expect(cri!.protobuf).toBe(0);
  expect(cri!.protoLoader).toBe(0);
  expect(cri!.dockerode).toBe(0);
});

test("opening the CRI runtime loads neither dockerode nor grpc-js; opening Docker loads dockerode and no gRPC", () => {
  const open = (runtime: string) =>
    `await (await import("./lib/assembly.ts")).openRuntime({ ...(await import("./lib/config/config-types.ts")).DEFAULT_CONFIG, containerRuntime: "${runtime}", containerRuntimeEndpoint: "unix:///nonexistent.sock", dockerEndpoint: "unix:///nonexistent.sock" }, (await import("./lib/log.ts")).silentLogger)`;
  const [cri] = loadedAfter([open("remote")]);
  const [docker] = loadedAfter([open("docker")]);
  expect(cri!.dockerode).toBe(0);
  expect(cri!.grpc).toBe(0);
  expect(docker!.dockerode).toBeGreaterThan(0);
  expect(docker!.grpc).toBe(0);
});

test("a socket served on demand listens at once, loads gRPC when the first client connects, and answers its calls", async () => {
  const dir = mkdtempSync(join(tmpdir(), "grpc-on-demand-"));
  const path = join(dir, "on-demand.sock");
  let loads = 0;
  const definition = {
    Echo: {
      path: "/test.Echo/Echo",
      requestStream: false,
      responseStream: false,
      requestSerialize: (value: object) => Buffer.from(JSON.stringify(value)),
      requestDeserialize: (bytes: Buffer) => JSON.parse(bytes.toString()),
      responseSerialize: (value: object) => Buffer.from(JSON.stringify(value)),
      responseDeserialize: (bytes: Buffer) => JSON.parse(bytes.toString()),
    },
  };
  const stop = await serveUnixOnDemand(
    path,
    (_grpc, server) =>
      server.addService(definition, {
        Echo: (call: { request: { n: number } }, callback: (error: null, response: object) => void) =>
          callback(null, { n: call.request.n + 1 }),
      }),
    () => {
      loads++;
      return loadGrpc();
    },
  );
  try {
    expect(existsSync(path)).toBe(true);
    expect(loads).toBe(0);
    const grpc = await loadGrpc();
    const Client = grpc.makeGenericClientConstructor(definition, "Echo");
    const call = (client: InstanceType<typeof Client>, n: number) =>
      new Promise<unknown>((done, fail) =>
        (client as unknown as Record<string, Function>).Echo!({ n }, (error: Error | null, response: unknown) =>
          error ? fail(error) : done(response),
        ),
      );
    const first = new Client(`unix://${path}`, grpc.credentials.createInsecure());
    const second = new Client(`unix://${path}`, grpc.credentials.createInsecure());
    expect(await call(first, 1)).toEqual({ n: 2 });
    expect(await call(second, 41)).toEqual({ n: 42 });
    expect(loads).toBe(1);
    first.close();
    second.close();
  } finally {
    await stop();
    rmSync(dir, { recursive: true, force: true });
  }
});

describeWithServices("a running Docker kubelet without etcd", (services) => {
  // A node name of its own: the shared daemon's containers of other nodes are not this kubelet's to stop.
  test("serves its device plugin and pod resources sockets, but loads no gRPC, etcd3 nor chokidar until a client connects", async () => {
    const rootDir = mkdtempSync(join(tmpdir(), "grpc-idle-"));
    const port = await freePortNumber();
    const script = `
      const { existsSync } = await import("node:fs");
      const { main } = await import(${JSON.stringify(`${root}/lib/cli/cli.ts`)});
      const quiet = { write: () => true };
      const io = { stdout: quiet, stderr: quiet, readStdin: async () => "", exit() {} };
      main(["run", "--docker_endpoint", ${JSON.stringify(services.dockerHost)}, "--root_dir", ${JSON.stringify(rootDir)},
        "--pod_network_mode", "none", "--healthz_port", "0", "--port", "${port}",
        "--hostname_override", "grpc-idle-${port}",
        "--cgroup_root", "/kubelet-test/${rootDir.split("/").pop()}"], io);
      const sockets = [${JSON.stringify(`${rootDir}/device-plugins/kubelet.sock`)}, ${JSON.stringify(`${rootDir}/pod-resources/kubelet.sock`)}];
      for (let i = 0; i < 600; i++) {
        const healthy = await fetch("http://127.0.0.1:${port}/healthz").then((r) => r.ok, () => false);
        if (healthy && sockets.every((s) => existsSync(s))) break;
        await Bun.sleep(100);
      }
      const keys = Object.keys(require.cache);
      console.log(JSON.stringify({
        sockets: sockets.filter((s) => existsSync(s)).length,
        grpc: keys.filter((k) => k.includes("/@grpc/grpc-js/")).length,
        etcd3: keys.filter((k) => k.includes("/node_modules/etcd3/")).length,
        chokidar: keys.filter((k) => k.includes("/node_modules/chokidar/")).length,
        dockerode: keys.filter((k) => k.includes("/node_modules/dockerode/")).length,
      }));
      process.exit(0);`;
    try {
      const run = Bun.spawn([process.execPath, "-e", script], { cwd: root, stdout: "pipe", stderr: "pipe" });
      const [out, err] = await Promise.all([new Response(run.stdout).text(), new Response(run.stderr).text()]);
      await run.exited;
      const last = out.trim().split("\n").pop() ?? "";
      if (!last.startsWith("{")) throw new Error(`the kubelet script printed no counts:\n${out}\n${err}`);
      expect(JSON.parse(last)).toEqual({ sockets: 2, grpc: 0, etcd3: 0, chokidar: 0, dockerode: expect.any(Number) });
      expect(JSON.parse(last).dockerode).toBeGreaterThan(0);
    } finally {
      rmSync(rootDir, { recursive: true, force: true });
    }
  }, 90_000);
});

test("grpc-js's reconnect back-off ends its delay after its start, without Date's local-time setters (patches/: they load the time zone, 4 ms of the first CRI call)", async () => {
  const grpc = await loadGrpc();
  const localSetter = Date.prototype.setMilliseconds;
  Date.prototype.setMilliseconds = () => {
    throw new Error("a local-time Date setter was called");
  };
  try {
    const backoff = new grpc.experimental.BackoffTimeout(() => {}, { initialDelay: 1000 });
    const before = Date.now();
    backoff.runOnce();
    const end = backoff.getEndTime().getTime();
    backoff.reset();
    const afterReset = backoff.getEndTime().getTime();
    backoff.stop();
    expect(end - before).toBeGreaterThanOrEqual(1000);
    expect(end - Date.now()).toBeLessThanOrEqual(1000);
    expect(afterReset).toBeGreaterThanOrEqual(end);
  } finally {
    Date.prototype.setMilliseconds = localSetter;
  }
});
