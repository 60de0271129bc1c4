// Bulk bytes through one real `kubectl port-forward` on each runtime: several large echoes in turn, each on a new
// connection and several on one connection, every byte checked, and the throughput against a direct connection to
// the same echo server (a host-network pod, so both paths end at one `nc -e cat`).
import { afterAll, beforeAll, expect } from "bun:test";
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { connect, type Socket } from "node:net";
import { join } from "node:path";
import { apiFront, kubeletForKubectl } from "./api-shim.ts";
import { describeOnRuntimes, freePort, Kubelet, removeDir, tempDir, test, waitFor, writePod } from "./harness.ts";

const KUBECTL = "/usr/bin/kubectl";
const POD = "e2e-pfload";
const HOST_POD = "e2e-pfload-host";
const ECHO_PORT = 18080;
/** As in the issue: large enough that the bytes sent while a connection opens outgrow every pipe on the way. */
const SIZE = 20 * 1024 * 1024;

const sha = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");

/** Opens a TCP connection to 127.0.0.1:`port`. */
function open(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: "127.0.0.1", port });
    socket.once("connect", () => resolve(socket));
    socket.once("error", reject);
  });
}

/**
 * Writes `payload` on `socket` and collects as many bytes back; rejects, saying how many came, when none arrive for
 * `quietMs` (a stalled forward) or the far end closes early.
 */
function echo(socket: Socket, payload: Uint8Array, quietMs = 15_000): Promise<Uint8Array> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let received = 0;
    let timer: ReturnType<typeof setTimeout>;
    const finish = (error?: Error) => {
      clearTimeout(timer);
      socket.off("data", onData);
      socket.off("close", onClose);
      if (error) reject(error);
      else resolve(new Uint8Array(Buffer.concat(chunks)));
    };
    const arm = () => {
      clearTimeout(timer);
      timer = setTimeout(
        () => finish(new Error(`stalled: ${received} of ${payload.length} bytes back, none for ${quietMs} ms`)),
        quietMs,
      );
    };
    const onData = (chunk: Buffer) => {
      chunks.push(chunk);
      received += chunk.length;
      arm();
      if (received >= payload.length) finish();
    };
    const onClose = () => finish(new Error(`closed: ${received} of ${payload.length} bytes back`));
    socket.on("data", onData);
    socket.on("close", onClose);
    arm();
    socket.write(payload);
  });
}

/** One echo of `payload` on a new connection; the milliseconds it took. */
async function echoOnce(port: number, payload: Uint8Array): Promise<number> {
  const socket = await open(port);
  try {
    const started = performance.now();
    const back = await echo(socket, payload);
    const took = performance.now() - started;
    expect(back.length).toBe(payload.length);
    expect(sha(back)).toBe(sha(payload));
    return took;
  } finally {
    socket.destroy();
  }
}

function kubectlForward(env: Record<string, string>, target: string, port: number) {
  const child: ChildProcess = spawn(KUBECTL, ["port-forward", target, `0:${port}`], {
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout!.on("data", (d) => (output += d));
  child.stderr!.on("data", (d) => (output += d));
  return {
    output: () => output,
    /** The local port kubectl chose ("Forwarding from 127.0.0.1:NNNN -> PORT"). */
    local: async () => {
      await waitFor("kubectl port-forward listening", () => /Forwarding from 127\.0\.0\.1:\d+/.test(output), 20_000);
      return Number(/Forwarding from 127\.0\.0\.1:(\d+)/.exec(output)![1]);
    },
    stop: () => child.kill("SIGINT"),
  };
}

describeOnRuntimes("kubectl port-forward under bulk bytes", (services, rt) => {
  const dir = tempDir("pfload");
  const manifests = join(dir, "manifests");
  const rootDir = join(dir, "root");
  let hostEcho = 0;
  let kubelet: Kubelet;
  let front: Awaited<ReturnType<typeof apiFront>>;
  const env: Record<string, string> = {};
  const payload = new Uint8Array(randomBytes(SIZE));

  beforeAll(async () => {
    spawnSync("mkdir", ["-p", manifests, rootDir, join(dir, "home")]);
    hostEcho = await freePort();
    writePod(manifests, POD, {
      terminationGracePeriodSeconds: 1,
      containers: [
        { name: "echo", image: services.busybox, command: ["nc", "-ll", "-p", String(ECHO_PORT), "-e", "cat"] },
      ],
    });
    writePod(manifests, HOST_POD, {
      hostNetwork: true,
      terminationGracePeriodSeconds: 1,
      containers: [
        {
          name: "echo",
          image: services.busybox,
          command: ["nc", "-ll", "-p", String(hostEcho), "-e", "cat"],
        },
      ],
    });
    const started = await kubeletForKubectl(dir, rt.runFlags(manifests, rootDir));
    ({ kubelet, front } = started);
    Object.assign(env, started.env);
    for (const pod of [POD, HOST_POD])
      await waitFor(`${pod}'s echo running`, async () => Boolean(await rt.running(pod, "echo")), 60_000);
  }, 120_000);
  afterAll(async () => {
    await kubelet?.stop("SIGKILL");
    front?.close();
    await rt.removePods(POD, HOST_POD);
    removeDir(dir);
  });

  test("kubectl port-forward carries five large echoes in turn, each on a new connection, every byte back", async () => {
    const forward = kubectlForward(env, POD, ECHO_PORT);
    try {
      const local = await forward.local();
      for (let round = 1; round <= 5; round++)
        await echoOnce(local, payload).catch((error: Error) => {
          throw new Error(`echo ${round} of 5: ${error.message}\nkubectl: ${forward.output()}`);
        });
    } finally {
      forward.stop();
    }
  }, 120_000);

  test("kubectl port-forward carries three large echoes in turn on one connection, every byte back", async () => {
    const forward = kubectlForward(env, POD, ECHO_PORT);
    try {
      const socket = await open(await forward.local());
      try {
        for (let round = 1; round <= 3; round++) {
          const back = await echo(socket, payload).catch((error: Error) => {
            throw new Error(`echo ${round} of 3: ${error.message}\nkubectl: ${forward.output()}`);
          });
          expect(sha(back)).toBe(sha(payload));
        }
      } finally {
        socket.destroy();
      }
    } finally {
      forward.stop();
    }
  }, 120_000);

  test("an echo through kubectl port-forward comes back within a bounded factor of a direct connection's time", async () => {
    const forward = kubectlForward(env, `pod/${HOST_POD}`, hostEcho);
    try {
      const local = await forward.local();
      // Alternated, so load on the machine falls on both alike; the best of three of each.
      const direct: number[] = [];
      const forwarded: number[] = [];
      for (let round = 0; round < 3; round++) {
        direct.push(await echoOnce(hostEcho, payload));
        forwarded.push(await echoOnce(local, payload));
      }
      const best = (times: number[]) => Math.min(...times);
      const ratio = best(forwarded) / best(direct);
      const mbps = (ms: number) => ((2 * SIZE) / 1024 / 1024 / (ms / 1000)).toFixed(1);
      console.log(
        `port-forward throughput [${rt.name}]: direct ${mbps(best(direct))} MB/s, kubectl port-forward ${mbps(best(forwarded))} MB/s, ratio ${ratio.toFixed(2)} (API front ${front.shimmed ? "shimmed: a TLS proxy in this process" : "the kubelet itself"}; load ${spawnSync("cat", ["/proc/loadavg"]).stdout.toString().trim()})`,
      );
      // Generous: a loaded machine stretches both, but the forward must not crawl.
      expect(ratio).toBeLessThan(20);
    } finally {
      forward.stop();
    }
  }, 120_000);
});
