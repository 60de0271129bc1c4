// Streamed exec through the info server's /exec (WebSocket, channel protocol, served by Bun) against
// the runtime's own exec, on the test services, both runtimes: the latency of `echo hi` (p50/p95 of N)
// and the throughput of 64 MiB of output. Baselines in the same run: the port's exec sync (Docker's
// Engine API exec; the CRI's ExecSync), and on Docker the docker CLI too.
// Usage: bun bench/exec.bench.ts [trials]   (needs scripts/services.sh up)
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { Hono } from "hono";
import { systemClock } from "../lib/clock.ts";
import { createCriClient } from "../lib/container/cri/cri-client.ts";
import { createCriRuntime } from "../lib/container/cri/cri.ts";
import { createDockerRuntime } from "../lib/container/docker/docker.ts";
import type { Runtime } from "../lib/container/runtime.ts";
import { serve } from "../lib/platform/serve.ts";
import { createStreamRoutes } from "../lib/server/stream-routes.ts";
import { connectChannels } from "../lib/testing/channel-client.ts";
import { testContainerConfig, testSandboxConfig } from "../lib/testing/cri-configs.ts";
import { testServices } from "../lib/testing/services.ts";
import { machine, ms, percentile } from "./support.ts";

const services = testServices();
if (!services) throw new Error("test services are not running: run `bash scripts/services.sh up`");
const trials = Number(process.argv[2] ?? 30);
const BIG = 64 * 1024 * 1024;
const big = ["busybox", "head", "-c", String(BIG), "/dev/zero"];
console.log(machine());

async function timed(fn: () => Promise<unknown> | unknown): Promise<number> {
  const started = performance.now();
  await fn();
  return performance.now() - started;
}

async function measure(label: string, fn: () => Promise<unknown> | unknown): Promise<number[]> {
  await fn(); // warm-up
  const times: number[] = [];
  for (let i = 0; i < trials; i++) times.push(await timed(fn));
  console.log(`  ${label.padEnd(34)} p50 ${ms(percentile(times, 50))}, p95 ${ms(percentile(times, 95))}`);
  return times;
}

async function throughput(label: string, fn: () => Promise<number>): Promise<number> {
  const started = performance.now();
  const bytes = await fn();
  const seconds = (performance.now() - started) / 1000;
  if (bytes !== BIG) throw new Error(`${label}: got ${bytes} bytes, expected ${BIG}`);
  const rate = bytes / 2 ** 20 / seconds;
  console.log(`  ${label.padEnd(34)} ${rate.toFixed(0)} MiB/s (64 MiB in ${ms(seconds * 1000)})`);
  return rate;
}

async function benchRuntime(name: string, runtime: Runtime, cli?: (...args: string[]) => string): Promise<void> {
  console.log(`${name}:`);
  const sandbox = testSandboxConfig(`exec-bench-${Date.now()}`, "exec-bench");
  sandbox.log_directory = join(services!.dir, "pod-logs", "exec-bench");
  const sandboxId = await runtime.runPodSandbox(sandbox);
  const config = testContainerConfig(sandbox, "app", 0, services!.busybox, ["sleep", "600"]);
  const id = await runtime.createContainer(sandboxId, config, sandbox);
  await runtime.startContainer(id);
  const app = new Hono().route("/", createStreamRoutes({ runtime, pods: () => [] }));
  const server = await serve(app, { hostname: "127.0.0.1", port: 0 });
  const url = (cmd: string[]) =>
    `http://127.0.0.1:${server.port}/exec/default/exec-bench/app?${cmd.map((c) => `command=${encodeURIComponent(c)}`).join("&")}&output=1`;
  const overWebSocket = async (cmd: string[]) => {
    const client = await connectChannels(url(cmd));
    await client.finished;
    return client;
  };
  try {
    const stream = await measure("/exec WebSocket (echo hi)", () => overWebSocket(["echo", "hi"]));
    const sync = await measure("port exec sync (echo hi)", () => runtime.exec(id, ["echo", "hi"]));
    const viaCli = cli ? await measure("docker exec CLI (echo hi)", () => cli("exec", id, "echo", "hi")) : undefined;
    console.log(
      `  latency ratio /exec ÷ exec sync: p50 ${(percentile(stream, 50) / percentile(sync, 50)).toFixed(2)}×` +
        (viaCli ? `; /exec ÷ docker CLI: p50 ${(percentile(stream, 50) / percentile(viaCli, 50)).toFixed(2)}×` : ""),
    );
    // A bare WebSocket that only counts stdout bytes: the client shares this process with the server.
    const ws = await throughput("/exec WebSocket (64 MiB out)", () => {
      const socket = new WebSocket(url(big).replace(/^http/, "ws"), ["v5.channel.k8s.io"]);
      socket.binaryType = "arraybuffer";
      let bytes = 0;
      socket.onmessage = (event) => {
        const data = new Uint8Array(event.data as ArrayBuffer);
        if (data[0] === 1) bytes += data.length - 1;
      };
      return new Promise<number>((resolve) => (socket.onclose = () => resolve(bytes)));
    });
    const direct = await throughput("port execStream (64 MiB out)", async () => {
      const session = await runtime.execStream(id, big, { stdout: true });
      let bytes = 0;
      for await (const chunk of session.output) bytes += chunk.data.length;
      session.close();
      return bytes;
    });
    console.log(`  throughput ratio /exec ÷ port execStream: ${(ws / direct).toFixed(2)}×`);
  } finally {
    await server.stop();
    await runtime.removeContainer(id);
    await runtime.removePodSandbox(sandboxId);
  }
}

const docker = createDockerRuntime({
  endpoint: services.dockerHost,
  shim: { podInfraImage: services.pause, podNetworkMode: "none" },
});
const cli = (...args: string[]) => execFileSync("docker", ["-H", services.dockerHost, ...args], { encoding: "utf8" });
await benchRuntime("docker", docker, cli);
const client = createCriClient({ runtimeEndpoint: services.containerd, requestTimeoutMs: 30_000 });
await benchRuntime("containerd", createCriRuntime(client, { clock: systemClock }));
client.close();
