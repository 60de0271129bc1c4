import { expect, test } from "bun:test";
import { resolve } from "node:path";

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

test("kubelet --version, validate and the composition root load no gRPC nor dockerode; the CRI client loads grpc-js but neither protobufjs nor proto-loader", () => {
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
  expect(cri!.grpc).toBeGreaterThan(0);
  expect(cri!.protobuf).toBe(0);
  expect(cri!.protoLoader).toBe(0);
  expect(cri!.dockerode).toBe(0);
});

test("opening the CRI runtime loads no dockerode; opening Docker loads it and no gRPC", () => {
  const open = (runtime: string) =>
    `await (await import("./lib/assembly.ts")).openRuntime({ ...(await import("./lib/config/config-types.ts")).DEFAULT_CONFIG, containerRuntime: "${runtime}", containerRuntimeEndpoint: "unix:///nonexistent.sock", dockerEndpoint: "unix:///nonexistent.sock" }, (await import("./lib/log.ts")).silentLogger)`;
  const [cri] = loadedAfter([open("remote")]);
  const [docker] = loadedAfter([open("docker")]);
  expect(cri!.dockerode).toBe(0);
  expect(cri!.grpc).toBeGreaterThan(0);
  expect(docker!.dockerode).toBeGreaterThan(0);
  expect(docker!.grpc).toBe(0);
});
