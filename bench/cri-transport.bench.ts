// Issue 41 items 3 and 7: the CRI's unary calls through grpc-js against the same calls over node:http2 directly
// (lib/container/cri/grpc-h2.ts): CPU per warm call (Version, ContainerStatus, ListContainers, ListPodSandbox and the
// relist's two lists at once) at --pods sleeping pods, and in a cold process the transport's module load and its
// first call (connection included); under bun, `deno run -A` and a binary compiled with build.ts's flags. Both
// transports carry the same bytes and decode the answers with the same codecs: the difference is the transport's.
// Usage: bash scripts/services.sh up && bun bench/cri-transport.bench.ts [--pods 110] [--calls 2000] [--cold 11]
//        [--containerd 1.6]
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";

const args = process.argv.slice(2);
const value = (name: string, fallback: string) => (args.includes(name) ? args[args.indexOf(name) + 1]! : fallback);
type Transport = "grpc-js" | "h2";

const encodeRequests = async () => {
  const { createCriCodecs } = await import("../lib/container/cri/cri-codec.ts");
  const { CRI_SCHEMA } = await import("../lib/container/cri/cri-schema.ts");
  const codecs = createCriCodecs(CRI_SCHEMA);
  return {
    codecs,
    request: (type: string, value: object) => Buffer.from(codecs.codec(type).encode(value)),
  };
};

/** One transport's unary call on raw bytes: path, request → answer bytes. */
async function openTransport(transport: Transport, path: string) {
  if (transport === "h2") {
    const { createGrpcChannel } = await import("../lib/container/cri/grpc-h2.ts");
    const channel = createGrpcChannel({ path, maxReceiveMessageBytes: 16 * 1024 * 1024 });
    return { call: (method: string, bytes: Buffer) => channel.unary(method, bytes), close: () => channel.close() };
  }
  const grpc = await import("@grpc/grpc-js");
  const same = (b: Buffer) => b;
  const methods = ["Version", "ListContainers", "ListPodSandbox", "ContainerStatus"];
  const Client = grpc.makeGenericClientConstructor(
    Object.fromEntries(
      methods.map((m) => [
        m,
        {
          path: `/runtime.v1.RuntimeService/${m}`,
          requestStream: false,
          responseStream: false,
          requestSerialize: same,
          requestDeserialize: same,
          responseSerialize: same,
          responseDeserialize: same,
        },
      ]),
    ),
    "RuntimeService",
  );
  const client = new Client(`unix://${path}`, grpc.credentials.createInsecure(), {
    "grpc.max_receive_message_length": 16 * 1024 * 1024,
  });
  return {
    call: (method: string, bytes: Buffer) =>
      new Promise<Buffer>((resolve, reject) =>
        (client as any)[method.split("/").pop()!](
          bytes,
          new grpc.Metadata(),
          { deadline: Date.now() + 10_000 },
          (error: Error | null, answer: Buffer) => (error ? reject(error) : resolve(answer)),
        ),
      ),
    close: () => client.close(),
  };
}

/** In a fresh process: load, first call, then CPU per warm call by kind. Prints one JSON line. */
async function probe(transport: Transport, path: string, calls: number) {
  const cpuMs = () => {
    const u = process.cpuUsage();
    return (u.user + u.system) / 1000;
  };
  const { codecs, request } = await encodeRequests();
  const t0 = performance.now();
  const c0 = cpuMs();
  const client = await openTransport(transport, path);
  const loadMs = performance.now() - t0;
  const loadCpuMs = cpuMs() - c0;
  const version = request("VersionRequest", { version: "v1" });
  const p = (m: string) => `/runtime.v1.RuntimeService/${m}`;
  const t1 = performance.now();
  const c1 = cpuMs();
  await client.call(p("Version"), version);
  const firstCallMs = performance.now() - t1;
  const firstCallCpuMs = cpuMs() - c1;
  const t2 = performance.now();
  await client.call(p("Version"), version);
  const secondCallMs = performance.now() - t2;
  const out: Record<string, number> = { loadMs, loadCpuMs, firstCallMs, firstCallCpuMs, secondCallMs };
  if (calls > 0) {
    const containers = codecs
      .codec("ListContainersResponse")
      .decode(await client.call(p("ListContainers"), request("ListContainersRequest", {}))) as {
      containers: Array<{ id: string }>;
    };
    const status = request("ContainerStatusRequest", { container_id: containers.containers[0]?.id ?? "" });
    const kinds: Array<[string, () => Promise<unknown>]> = [
      ["Version", () => client.call(p("Version"), version)],
      ["ContainerStatus", () => client.call(p("ContainerStatus"), status)],
      ["ListContainers", () => client.call(p("ListContainers"), request("ListContainersRequest", {}))],
      ["ListPodSandbox", () => client.call(p("ListPodSandbox"), request("ListPodSandboxRequest", {}))],
      [
        "relist",
        () =>
          Promise.all([
            client.call(p("ListPodSandbox"), request("ListPodSandboxRequest", {})),
            client.call(p("ListContainers"), request("ListContainersRequest", {})),
          ]),
      ],
    ];
    for (const [, run] of kinds) for (let i = 0; i < 200; i++) await run(); // warm the JIT on every path
    for (const [kind, run] of kinds) {
      const c = cpuMs();
      const t = performance.now();
      for (let i = 0; i < calls; i++) await run();
      out[`${kind} cpu`] = (cpuMs() - c) / calls;
      out[`${kind} wall`] = (performance.now() - t) / calls;
    }
    out.items = containers.containers.length;
  }
  client.close();
  console.log(JSON.stringify(out));
  process.exit(0);
}

if (args[0] === "--probe") {
  await probe(args[1] as Transport, args[2]!, Number(args[3]));
} else {
  await main();
}

async function main() {
  const { testServices } = await import("../lib/testing/services.ts");
  const services = testServices();
  if (!services?.containerd) throw new Error("services are not running: bash scripts/services.sh up");
  const endpoint = value("--containerd", "1.6") === "1.7" ? services.containerd17! : services.containerd;
  const path = endpoint.replace(/^unix:\/\//, "");
  const pods = Number(value("--pods", "110"));
  const calls = Number(value("--calls", "2000"));
  const coldRounds = Number(value("--cold", "11"));
  await ensurePods(services, endpoint, pods);

  const root = join(import.meta.dir, "..");
  const bun = join(root, "node_modules/.bin/bun");
  const deno = join(root, "node_modules/.bin/deno");
  const self = join(import.meta.dir, "cri-transport.bench.ts");
  const dir = mkdtempSync(join(tmpdir(), "cri-transport-"));
  const { LEFT_OUT } = await import("../build.ts");
  const compiled = join(dir, "probe");
  const build = spawnSync(
    bun,
    [
      "build",
      "--compile",
      "--minify",
      "--sourcemap",
      "--bytecode",
      "--format",
      "esm",
      ...LEFT_OUT,
      self,
      "--outfile",
      compiled,
    ],
    { cwd: root, encoding: "utf8" },
  );
  if (build.status !== 0) throw new Error(`compiling the probe: ${build.stderr}`);
  const hosts: Array<[string, string[]]> = [
    ["bun", [bun, self, "--probe"]],
    ["deno", [deno, "run", "-A", self, "--probe"]],
    ["compiled", [compiled, "--probe"]],
  ];
  const runProbe = (command: string[], transport: Transport, n: number) => {
    const run = spawnSync(command[0]!, [...command.slice(1), transport, path, String(n)], {
      cwd: root,
      encoding: "utf8",
    });
    if (run.status !== 0) throw new Error(`${command.join(" ")} ${transport}: ${run.stderr}`);
    return JSON.parse(run.stdout.trim().split("\n").pop()!) as Record<string, number>;
  };
  const median = (xs: number[]) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  console.log(
    `load average at start: ${loadavg()
      .map((l) => l.toFixed(1))
      .join(" ")}`,
  );
  const kinds = ["Version", "ContainerStatus", "ListContainers", "ListPodSandbox", "relist"];
  for (const [host, command] of hosts) {
    // Warm: three processes a transport, alternated, the median of each figure.
    const warm: Record<Transport, Array<Record<string, number>>> = { "grpc-js": [], h2: [] };
    for (let r = 0; r < 3; r++)
      for (const t of (r % 2 ? ["h2", "grpc-js"] : ["grpc-js", "h2"]) as Transport[])
        warm[t].push(runProbe(command, t, calls));
    const cold: Record<Transport, Array<Record<string, number>>> = { "grpc-js": [], h2: [] };
    for (let r = 0; r < coldRounds; r++)
      for (const t of (r % 2 ? ["h2", "grpc-js"] : ["grpc-js", "h2"]) as Transport[])
        cold[t].push(runProbe(command, t, 0));
    console.log(
      `\n${host}: ${warm.h2[0]!.items} containers listed; CPU per warm call, µs (wall µs), medians of 3 processes × ${calls} calls`,
    );
    console.log("| transport | " + kinds.join(" | ") + " | load ms (CPU) | first call ms (CPU) | second call ms |");
    console.log("| --- | " + kinds.map(() => "---").join(" | ") + " | --- | --- | --- |");
    for (const t of ["grpc-js", "h2"] as Transport[]) {
      const m = (key: string, from = warm[t]) => median(from.map((x) => x[key]!));
      const cells = kinds.map((k) => `${(m(`${k} cpu`) * 1000).toFixed(0)} (${(m(`${k} wall`) * 1000).toFixed(0)})`);
      const c = (key: string) => m(key, cold[t]).toFixed(1);
      console.log(
        `| ${t} | ${cells.join(" | ")} | ${c("loadMs")} (${c("loadCpuMs")}) | ${c("firstCallMs")} (${c("firstCallCpuMs")}) | ${c("secondCallMs")} |`,
      );
    }
  }
  console.log(
    `load average at end: ${loadavg()
      .map((l) => l.toFixed(1))
      .join(" ")}`,
  );
  rmSync(dir, { recursive: true, force: true });
}

/** `pods` sleeping sandboxes with one container each, labelled for this bench; made once, kept for the next run. */
async function ensurePods(services: { busybox: string; dir: string }, endpoint: string, pods: number) {
  const { createCriClient } = await import("../lib/container/cri/cri-client.ts");
  const { testContainerConfig, testSandboxConfig } = await import("../lib/testing/cri-configs.ts");
  const client = createCriClient({ runtimeEndpoint: endpoint, requestTimeoutMs: 120_000 });
  const have = new Set(
    (await client.listPodSandbox({ state: "SANDBOX_READY", labelSelector: { bench: "cri-transport" } })).map(
      (s: any) => s.metadata.name,
    ),
  );
  const missing = Array.from({ length: pods }, (_, i) => `crit-${i}`).filter((n) => !have.has(n));
  for (let i = 0; i < missing.length; i += 10)
    await Promise.all(
      missing.slice(i, i + 10).map(async (name) => {
        // Without the kubelet's labels: a kubelet on the same containerd leaves them alone (it stops pods it does
        // not know), and the raw lists still carry them.
        const sandbox = { ...testSandboxConfig(`${name}-uid`, name), labels: { bench: "cri-transport" } };
        sandbox.log_directory = join(services.dir, "pod-logs", name);
        const id = await client.runPodSandbox(sandbox);
        const config = {
          ...testContainerConfig(sandbox, "sleep", 0, services.busybox, ["sleep", "86400"]),
          labels: { bench: "cri-transport" },
        };
        await client.startContainer(await client.createContainer(id, config, sandbox));
      }),
    );
  client.close();
}
