// What the kubelet benches share: percentiles, waiting on a condition, the Docker Engine API over its
// socket (requests and the event stream), a kubelet binary started on either runtime, and a process's
// CPU and memory read from /proc. Not a bench itself (bench/run.ts runs *.bench.ts only).
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, totalmem } from "node:os";
import { join } from "node:path";
import { createCriClient } from "../lib/container/cri/cri-client.ts";
import type { CriClient, PodSandboxConfig } from "../lib/container/cri-types.ts";
import { KUBELET_BINARY, type TestServices } from "../lib/testing/services.ts";
import { freePort, tempDir, testCgroupRoot } from "../test/e2e/harness.ts";

/** The p-th percentile (nearest rank) of some values. */
export const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
};

export const ms = (n: number) => `${n.toFixed(0)} ms`;

/** The machine line every bench prints first: CPUs, memory, and how busy the shared machine is. */
export const machine = () =>
  `machine: ${cpus().length} × ${cpus()[0]?.model.trim()}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB; load average ${loadavg()
    .map((l) => l.toFixed(1))
    .join(" ")} (shared with other engineers' test runs)`;

/** Polls `check` every few ms until it holds. */
export async function until(check: () => Promise<boolean> | boolean, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms`);
    await Bun.sleep(10);
  }
}

/** The Docker Engine API on the services' daemon. */
export function engineApi(services: TestServices) {
  const socket = services.dockerHost.replace("unix://", "");
  const request = async (method: string, path: string, body?: unknown): Promise<any> => {
    const response = await fetch(`http://docker${path}`, {
      method,
      unix: socket,
      headers: { "content-type": "application/json" },
      body: body ? JSON.stringify(body) : undefined,
    } as RequestInit);
    if (response.status >= 400) throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`);
    return response.status === 204 || response.status === 304 ? undefined : response.json();
  };
  const filters = (f: Record<string, string[]>) => encodeURIComponent(JSON.stringify(f));
  return {
    request,
    /** Containers matching Engine filters (all states unless `status` is given). */
    list: (f: Record<string, string[]>): Promise<Array<{ Id: string; Names: string[]; State: string }>> =>
      request("GET", `/containers/json?all=1&filters=${filters(f)}`),
    async removeAll(f: Record<string, string[]>) {
      for (const c of await this.list(f)) await request("DELETE", `/containers/${c.Id}?force=1`).catch(() => {});
    },
    /**
     * Follows the daemon's container events from now on; `next(match)` resolves with the first event
     * (seen before or after the call) that matches and was not handed out yet.
     */
    async events(signal: AbortSignal) {
      const seen: DockerEvent[] = [];
      const waiters: Array<{ match: (e: DockerEvent) => boolean; resolve: (e: DockerEvent) => void }> = [];
      const response = await fetch(`http://docker/events?filters=${filters({ type: ["container"] })}`, {
        unix: socket,
        signal,
      } as RequestInit);
      void (async () => {
        let buffer = "";
        const decoder = new TextDecoder();
        try {
          for await (const chunk of response.body!) {
            buffer += decoder.decode(chunk, { stream: true });
            for (let nl = buffer.indexOf("\n"); nl >= 0; nl = buffer.indexOf("\n")) {
              const event = JSON.parse(buffer.slice(0, nl)) as DockerEvent;
              buffer = buffer.slice(nl + 1);
              const waiter = waiters.findIndex((w) => w.match(event));
              if (waiter >= 0) waiters.splice(waiter, 1)[0]!.resolve(event);
              else seen.push(event);
            }
          }
        } catch {
          // the signal ended the stream
        }
      })();
      return {
        next: (match: (e: DockerEvent) => boolean) =>
          new Promise<DockerEvent>((resolve) => {
            const index = seen.findIndex(match);
            if (index >= 0) resolve(seen.splice(index, 1)[0]!);
            else waiters.push({ match, resolve });
          }),
      };
    },
  };
}

/** One event of the Engine's stream: `time_nano` is the daemon's clock, the same for every event. */
export interface DockerEvent {
  Action: string;
  id: string;
  timeNano: number;
  Actor: { Attributes: Record<string, string> };
}

/** Docker, or the CRI on containerd 1.6 ("remote") or on 1.7 ("remote-1.7", its event stream). */
export type RuntimeChoice = "docker" | "remote" | "remote-1.7";

/** The CRI socket a CRI choice drives (containerd 1.7 needs services.sh's second daemon). */
export function criEndpoint(services: TestServices, runtime: "remote" | "remote-1.7"): string {
  if (runtime === "remote") return services.containerd;
  if (!services.containerd17) throw new Error("containerd 1.7 is not among the services: bash scripts/services.sh up");
  return services.containerd17;
}

/** A kubelet binary (dist/kubelet) on one runtime, watching its own manifest directory. */
export interface BenchKubelet {
  dir: string;
  rootDir: string;
  port: number;
  child: ChildProcess;
  runtime: RuntimeChoice;
  stop(): Promise<void>;
}

/**
 * Starts dist/kubelet on Docker or on containerd through the CRI, pods on network mode none, and waits
 * for /healthz. `dir`/`rootDir` reuse a previous kubelet's (it adopts the pods that run).
 */
/**
 * The `Environment=` settings of the systemd unit install.sh writes (its unit_text): a bench's `kubelet run` is
 * measured as an installed node runs it, from the one place the unit's settings are written.
 */
export function unitEnvironment(): Record<string, string> {
  const script = readFileSync(join(import.meta.dir, "..", "install.sh"), "utf8");
  const unit = script.slice(
    script.indexOf("unit_text() {"),
    script.indexOf("\nEOF\n", script.indexOf("unit_text() {")),
  );
  return Object.fromEntries(
    [...unit.matchAll(/^Environment=([A-Za-z_][A-Za-z0-9_]*)=(.*)$/gm)].map(([, name, value]) => [name, value]),
  );
}

export async function startKubelet(
  services: TestServices,
  runtime: RuntimeChoice,
  options: { extraFlags?: string[]; dir?: string; rootDir?: string; binary?: string } = {},
): Promise<BenchKubelet> {
  const dir = options.dir ?? tempDir(`bench-${runtime}-manifests`);
  const rootDir = options.rootDir ?? tempDir(`bench-${runtime}-root`);
  const port = await freePort();
  const flags =
    runtime === "docker"
      ? ["--docker_endpoint", services.dockerHost, "--network_container_image", services.pause]
      : ["--container_runtime", "remote", "--container_runtime_endpoint", criEndpoint(services, runtime)];
  const child = spawn(
    options.binary ?? KUBELET_BINARY,
    [
      "run",
      "-c",
      dir,
      ...flags,
      "--pod_network_mode",
      "none",
      "--root_dir",
      rootDir,
      "--pod_logs_dir",
      join(rootDir, "logs"),
      "--port",
      String(port),
      // Off the shared machine's fixed ports and /kubepods, as the e2e kubelets do.
      "--healthz_port",
      "0",
      "--cgroup_root",
      testCgroupRoot(rootDir),
      "--log_format",
      "json",
      "-v",
      "0",
      ...(options.extraFlags ?? []),
    ],
    { stdio: "ignore", env: { ...process.env, ...unitEnvironment() } },
  );
  await until(async () => (await fetch(`http://127.0.0.1:${port}/healthz`).catch(() => undefined))?.status === 200);
  return {
    dir,
    rootDir,
    port,
    child,
    runtime,
    async stop() {
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGTERM");
      await exited;
    },
  };
}

/** A busybox pod that sleeps, as every bench writes it. */
export const sleepingPod = (services: TestServices, name: string) => `apiVersion: v1
kind: Pod
metadata: { name: ${name} }
spec:
  terminationGracePeriodSeconds: 0
  containers:
    - { name: app, image: ${services.busybox}, imagePullPolicy: IfNotPresent, command: ["sleep", "3600"] }
`;

/** A manifest directory under `root` holding `count` sleeping pods named `<prefix>-<i>` (none for 0), and its podman twin. */
export function sleepingPodSet(
  services: TestServices,
  root: string,
  prefix: string,
  count: number,
): { dir: string; podmanFile: string } {
  const dir = join(root, prefix);
  mkdirSync(dir, { recursive: true });
  const pods = Array.from({ length: count }, (_, i) => sleepingPod(services, `${prefix}-${i}`));
  pods.forEach((yaml, i) => writeFileSync(join(dir, `${i}.yaml`), yaml));
  const podmanFile = join(root, `${prefix}.podman.yaml`);
  writeFileSync(podmanFile, pods.join("---\n").replaceAll(services.busybox, `localhost/${services.busybox}`));
  return { dir, podmanFile };
}

/** CPU time a process used so far, in seconds (utime + stime from /proc, 100 ticks a second). */
export function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/** CPU seconds so far of each of the process's threads, summed by thread name (/proc/<pid>/task/<tid>/stat). */
export function threadSeconds(pid: number): Map<string, number> {
  const byName = new Map<string, number>();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, "utf8");
      const name = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")")).replace(/[0-9]+$/, "N");
      const fields = stat.slice(stat.lastIndexOf(") ") + 2).split(" ");
      byName.set(name, (byName.get(name) ?? 0) + (Number(fields[11]) + Number(fields[12])) / 100);
    } catch {
      // a thread that ended between the listing and the read
    }
  }
  return byName;
}

/** Resident memory now and at its peak, MB, from /proc/<pid>/status. */
export function memory(pid: number): { rssMb: number; peakMb: number } {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)![1]) / 1024;
  return { rssMb: kb("VmRSS"), peakMb: kb("VmHWM") };
}

/**
 * Counts running app containers of pods whose name starts with `prefix`, on Docker (the Engine API) or
 * on containerd (a CRI client of the bench's own, opened on first use). `close()` ends that client.
 */
export function appCounter(services: TestServices) {
  const engine = engineApi(services);
  const cris = new Map<string, ReturnType<typeof createCriClient>>();
  return {
    async running(runtime: RuntimeChoice, prefix: string): Promise<number> {
      if (runtime === "docker") return (await engine.list({ name: [`k8s_app_${prefix}`], status: ["running"] })).length;
      const endpoint = criEndpoint(services, runtime);
      const cri =
        cris.get(endpoint) ??
        cris.set(endpoint, createCriClient({ runtimeEndpoint: endpoint, requestTimeoutMs: 120_000 })).get(endpoint)!;
      return (await cri.listContainers()).filter(
        (c) =>
          c.state === "CONTAINER_RUNNING" &&
          c.labels["io.kubernetes.container.name"] === "app" &&
          (c.labels["io.kubernetes.pod.name"] ?? "").startsWith(prefix),
      ).length;
    },
    close: () => {
      for (const cri of cris.values()) cri.close();
    },
  };
}

/**
 * podman on its own storage and state (never the machine's), with the settings this machine needs:
 * cgroupfs, file events, the local pause image as infra, no network, and rlimits below what runc may
 * set here (podman's default nofile/nproc of 1048576 fail with "error setting rlimit type 7: operation
 * not permitted"). The bench's images are loaded from the Docker daemon once. Undefined without podman
 * (Debian: apt-get install podman; the benches' own setup, not the test services').
 */
export function podmanCommand(services: TestServices): string[] | undefined {
  if (spawnSync("podman", ["--version"]).status !== 0) return undefined;
  const dir = join(services.dir, "podman");
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, "containers.conf"),
    `[containers]
netns = "none"
default_ulimits = ["nofile=1024:1024", "nproc=4096:4096"]
[engine]
cgroup_manager = "cgroupfs"
events_logger = "file"
infra_image = "localhost/${services.pause}"
`,
  );
  process.env.CONTAINERS_CONF = join(dir, "containers.conf");
  const command = [
    "podman",
    "--root",
    join(dir, "root"),
    "--runroot",
    join(dir, "runroot"),
    "--tmpdir",
    join(dir, "tmp"),
  ];
  if (spawnSync(command[0]!, [...command.slice(1), "image", "exists", `localhost/${services.busybox}`]).status !== 0) {
    const archive = join(dir, "images.tar");
    spawnSync("docker", ["-H", services.dockerHost, "save", "-o", archive, services.busybox, services.pause]);
    spawnSync(command[0]!, [...command.slice(1), "load", "-i", archive], { stdio: "ignore" });
    rmSync(archive, { force: true });
  }
  return command;
}

/** Runs `podman kube play` on a YAML file (its way to start several pods): ms until it returned with all running; then `kube down`, not timed. */
export function podmanPlay(command: string[], file: string): number {
  const started = performance.now();
  const play = spawnSync(command[0]!, [...command.slice(1), "kube", "play", "--network", "none", file], {
    encoding: "utf8",
  });
  const elapsed = performance.now() - started;
  if (play.status !== 0) throw new Error(`podman kube play failed: ${play.stderr}`);
  spawnSync(command[0]!, [...command.slice(1), "kube", "down", file], { stdio: "ignore" });
  return elapsed;
}

/**
 * The floor a kubelet on the CRI is held to: the three calls of one pod (RunPodSandbox, CreateContainer,
 * StartContainer of a sleeping busybox) from a client already connected in this process. Returns the ms they took
 * and the sandbox, which the caller removes.
 */
export async function rawCriPod(
  cri: CriClient,
  services: TestServices,
  logDir: string,
  name: string,
): Promise<{ ms: number; sandbox: string }> {
  const config: PodSandboxConfig = {
    metadata: { name, namespace: "default", uid: `${name}-uid`, attempt: 0 },
    hostname: name,
    log_directory: join(logDir, name),
    labels: { bench: "raw" },
    linux: { security_context: { namespace_options: { network: "POD", pid: "CONTAINER", ipc: "POD" } } },
  };
  const started = performance.now();
  const sandbox = await cri.runPodSandbox(config);
  const id = await cri.createContainer(
    sandbox,
    {
      metadata: { name: "app", attempt: 0 },
      image: { image: services.busybox },
      command: ["sleep", "3600"],
      log_path: "app/0.log",
    },
    config,
  );
  await cri.startContainer(id);
  return { ms: performance.now() - started, sandbox };
}
