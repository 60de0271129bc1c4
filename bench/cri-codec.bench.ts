// The hand CRI codec (cri-codec.ts + cri-schema.ts) against code generated from the same cri-proto.ts by two
// maintained libraries: protobufjs static-module (`pbjs -t static-module`) and @bufbuild/protobuf (protoc-gen-es).
// Each is bundled as the release binary holds it (`bun build --minify`), then: (a) start-up: a fresh bun process
// imports the bundle and encodes + decodes one RunPodSandboxRequest (wall time and heap growth, median of RUNS,
// round-robin, less a bundle with no codec); (b) decoding a ListContainersResponse of 110 containers, in process,
// median of 200; (c) the minified bytes each bundle adds to the one with no codec. The generators
// are installed (npm, pinned) into a cache under the temp dir; protoc comes from Debian's protobuf-compiler.
// Usage: bun bench/cri-codec.bench.ts
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createCriCodecs } from "../lib/container/cri/cri-codec.ts";
import { CRI_PROTO } from "../lib/container/cri/cri-proto.ts";
import { CRI_SCHEMA } from "../lib/container/cri/cri-schema.ts";
import { machine } from "./support.ts";

const RUNS = Number(process.env.RUNS ?? 21);
const DECODES = Number(process.env.DECODES ?? 200);
const root = join(import.meta.dir, "..");
const bun = join(root, "node_modules/.bin/bun");
const GENERATORS = [
  "protobufjs@7.6.6",
  "protobufjs-cli@1.3.3",
  "@bufbuild/protobuf@2.17.0",
  "@bufbuild/protoc-gen-es@2.17.0",
];
// The cache keeps the installed generators between runs; the generated code is written anew each run.
const cache = join(tmpdir(), "kubelet-cri-codec-bench");
const out = join(cache, "run");

const run = (command: string, args: string[], cwd = cache) => {
  const result = spawnSync(command, args, { cwd, encoding: "utf8" });
  if (result.status !== 0)
    throw new Error(`${command} ${args.join(" ")} exited ${result.status}: ${result.stderr || result.error}`);
  return result.stdout;
};

// ---- generate

if (spawnSync("protoc", ["--version"]).status !== 0) {
  // A full `npm run bench` goes on without it: the machine prepared by scripts/services.sh has no protoc.
  console.log("cri-codec: not measured: protoc-gen-es needs protoc (apt-get install protobuf-compiler)");
  process.exit(0);
}
mkdirSync(cache, { recursive: true });
if (!existsSync(join(cache, "node_modules/@bufbuild/protoc-gen-es"))) {
  writeFileSync(join(cache, "package.json"), '{"private": true}\n');
  run("npm", ["install", "--no-audit", "--no-fund", "--ignore-scripts", ...GENERATORS]);
}
rmSync(out, { recursive: true, force: true });
mkdirSync(join(out, "es"), { recursive: true });
writeFileSync(join(out, "api.proto"), CRI_PROTO);
// As the hand codec: snake_case names, 64-bit numbers as numbers; no verify/create/delimited/service code.
run(join(cache, "node_modules/.bin/pbjs"), [
  ...["-t", "static-module", "-w", "es6", "--keep-case", "--force-number"],
  ...["--no-create", "--no-verify", "--no-delimited", "--no-typeurl", "--no-service", "--no-comments"],
  ...["-o", join(out, "pbjs.js"), join(out, "api.proto")],
]);
run(
  "protoc",
  [
    `--plugin=protoc-gen-es=${join(cache, "node_modules/.bin/protoc-gen-es")}`,
    `--es_out=${join(out, "es")}`,
    "--es_opt=target=js",
    `-I${out}`,
    "api.proto",
  ],
  out,
);

// Each subject: a module whose `roundTrip(value)` encodes and decodes a RunPodSandboxRequest given as the CRI client
// gives it (snake_case, enums by name) and returns it as the client reads it; `decodeList(bytes)` decodes a
// ListContainersResponse into objects (`raw`: the library's own message objects, no conversion).
const codecPath = join(root, "lib/container/cri/cri-codec.ts");
const schemaPath = join(root, "lib/container/cri/cri-schema.ts");
const subjects: Record<string, string> = {
  "no codec (the floor)": `
export const roundTrip = (value) => structuredClone(value);
export const decodeList = () => ({ containers: Array(110) });
export const decodeListRaw = decodeList;
`,
  "hand codec (cri-codec.ts + cri-schema.ts)": `
import { createCriCodecs } from ${JSON.stringify(codecPath)};
import { CRI_SCHEMA } from ${JSON.stringify(schemaPath)};
const codecs = createCriCodecs(CRI_SCHEMA);
export const roundTrip = (value) => { const c = codecs.codec("RunPodSandboxRequest"); return c.decode(c.encode(value)); };
export const decodeList = (bytes) => codecs.codec("ListContainersResponse").decode(bytes);
export const decodeListRaw = decodeList;
`,
  "protobufjs static-module (pbjs)": `
import { runtime } from "./pbjs.js";
const options = { longs: Number, enums: String, defaults: true };
export const roundTrip = (value) => {
  const M = runtime.v1.RunPodSandboxRequest;
  return M.toObject(M.decode(M.encode(M.fromObject(value)).finish()), options);
};
export const decodeList = (bytes) => runtime.v1.ListContainersResponse.toObject(runtime.v1.ListContainersResponse.decode(bytes), options);
export const decodeListRaw = (bytes) => runtime.v1.ListContainersResponse.decode(bytes);
`,
  "@bufbuild/protobuf (protoc-gen-es)": `
import { fromBinary, fromJson, toBinary, toJson } from "@bufbuild/protobuf";
import { ListContainersResponseSchema, RunPodSandboxRequestSchema } from "./es/api_pb.js";
// fromJson takes the proto field names and enum names the client uses; toJson gives them back (int64 as strings).
const options = { useProtoFieldName: true, alwaysEmitImplicit: true };
export const roundTrip = (value) =>
  toJson(RunPodSandboxRequestSchema, fromBinary(RunPodSandboxRequestSchema, toBinary(RunPodSandboxRequestSchema, fromJson(RunPodSandboxRequestSchema, value))), options);
export const decodeList = (bytes) => toJson(ListContainersResponseSchema, fromBinary(ListContainersResponseSchema, bytes), options);
export const decodeListRaw = (bytes) => fromBinary(ListContainersResponseSchema, bytes);
`,
};
const files = Object.keys(subjects).map((name, i) => {
  const source = join(out, `subject-${i}.js`);
  writeFileSync(source, subjects[name]!);
  const bundle = join(out, `subject-${i}.min.js`);
  run(bun, ["build", "--minify", "--target", "bun", "--format", "esm", source, "--outfile", bundle], out);
  return bundle;
});
const sizes = files.map((file) => statSync(file).size - statSync(files[0]!).size);

// ---- the messages

const labels = (pod: string, container: string) => ({
  "io.kubernetes.pod.name": pod,
  "io.kubernetes.pod.namespace": "default",
  "io.kubernetes.pod.uid": `0f4f6a7e-${pod}`,
  "io.kubernetes.container.name": container,
});
const sandboxRequest = {
  config: {
    metadata: { name: "web-0", uid: "0f4f6a7e-4a3b-4c0e-9d1f-2b7c9e5d1a00", namespace: "default", attempt: 0 },
    hostname: "web-0",
    log_directory: "/var/log/pods/default_web-0_0f4f6a7e-4a3b-4c0e-9d1f-2b7c9e5d1a00",
    dns_config: {
      servers: ["10.96.0.10"],
      searches: ["default.svc.cluster.local", "svc.cluster.local"],
      options: ["ndots:5"],
    },
    port_mappings: [{ protocol: "TCP", container_port: 8080, host_port: 0, host_ip: "" }],
    labels: labels("web-0", "POD"),
    annotations: { "kubernetes.io/config.source": "file", "kubernetes.io/config.seen": "2026-11-28T16:00:00Z" },
    linux: {
      cgroup_parent: "/kubepods/besteffort/pod0f4f6a7e",
      security_context: { namespace_options: { network: "POD", pid: "CONTAINER", ipc: "POD" } },
      sysctls: { "net.ipv4.ip_unprivileged_port_start": "0" },
    },
  },
  runtime_handler: "",
};
const hand = createCriCodecs(CRI_SCHEMA);
const listBytes = hand.codec("ListContainersResponse").encode({
  containers: Array.from({ length: 110 }, (_, i) => ({
    id: `${i.toString(16).padStart(8, "0")}${"a1b2c3d4".repeat(7)}`,
    pod_sandbox_id: `${i.toString(16).padStart(8, "0")}${"f0e1d2c3".repeat(7)}`,
    metadata: { name: `app-${i % 3}`, attempt: i % 2 },
    image: { image: "sha256:2f1e4bd0d1c8f6c0d4a2b8f0a6f3e2c1b9d8e7f6a5b4c3d2e1f0a9b8c7d6e5f4" },
    image_ref: "sha256:2f1e4bd0d1c8f6c0d4a2b8f0a6f3e2c1b9d8e7f6a5b4c3d2e1f0a9b8c7d6e5f4",
    state: i % 10 ? "CONTAINER_RUNNING" : "CONTAINER_EXITED",
    created_at: 1_764_345_600_000_000_000 + i * 1_000_000,
    labels: labels(`pod-${Math.floor(i / 2)}`, `app-${i % 3}`),
    annotations: {
      "io.kubernetes.container.hash": "5c0a4b2e",
      "io.kubernetes.container.restartCount": String(i % 2),
      "io.kubernetes.container.terminationMessagePath": "/dev/termination-log",
      "io.kubernetes.pod.terminationGracePeriod": "30",
    },
  })),
});

// ---- (a) start-up, fresh processes

const probe = join(out, "startup.js");
writeFileSync(
  probe,
  `const value = ${JSON.stringify(sandboxRequest)};
Bun.gc(true);
const heap0 = process.memoryUsage().heapUsed;
const t0 = performance.now();
const subject = await import(process.argv[2]);
const back = subject.roundTrip(value);
const ms = performance.now() - t0;
Bun.gc(true);
const heap = process.memoryUsage().heapUsed - heap0;
if (back.config.metadata.name !== "web-0") throw new Error("round trip lost the request");
console.log(JSON.stringify({ ms, heap }));
`,
);
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const startup = files.map(() => ({ ms: [] as number[], heap: [] as number[] }));
for (let round = 0; round <= RUNS; round++)
  files.forEach((file, i) => {
    const sample = JSON.parse(run(bun, [probe, file], out));
    if (round === 0) return; // warm-up: the file cache
    startup[i]!.ms.push(sample.ms);
    startup[i]!.heap.push(sample.heap);
  });

// ---- (b) decoding 110 containers, in process

const modules = await Promise.all(files.map((file) => import(file)));
const decodeSamples = modules.map(() => ({ full: [] as number[], raw: [] as number[] }));
for (let round = -20; round < DECODES; round++)
  modules.forEach((m, i) => {
    let t = performance.now();
    const list = m.decodeList(listBytes);
    const full = performance.now() - t;
    t = performance.now();
    m.decodeListRaw(listBytes);
    const raw = performance.now() - t;
    if (list.containers.length !== 110) throw new Error("the list lost containers");
    if (round < 0) return; // warm-up: the JIT
    decodeSamples[i]!.full.push(full);
    decodeSamples[i]!.raw.push(raw);
  });

rmSync(out, { recursive: true, force: true });

console.log(machine());
console.log(
  `median of ${RUNS} fresh processes (start-up) and of ${DECODES} decodes; ${listBytes.length} bytes of ListContainersResponse`,
);
console.log(
  "codec | import + RunPodSandbox encode/decode | heap growth | 110 containers decoded (as the client reads them / library objects) | minified bundle added",
);
const floor = { ms: median(startup[0]!.ms), heap: median(startup[0]!.heap) };
console.log(`no codec: ${floor.ms.toFixed(2)} ms, ${(floor.heap / 1024).toFixed(0)} KiB (subtracted below)`);
Object.keys(subjects).forEach((name, i) => {
  if (i === 0) return;
  const s = startup[i]!;
  const d = decodeSamples[i]!;
  console.log(
    [
      name,
      `${(median(s.ms) - floor.ms).toFixed(2)} ms`,
      `${((median(s.heap) - floor.heap) / 1024).toFixed(0)} KiB`,
      `${median(d.full).toFixed(3)} / ${median(d.raw).toFixed(3)} ms`,
      `${(sizes[i]! / 1024).toFixed(1)} KiB`,
    ].join(" | "),
  );
});
