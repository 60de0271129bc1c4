// Kubelets the end-to-end tests run in the background: spawned, recorded, waited on, stopped, and
// never left behind. A kubelet that outlives its test keeps managing the shared test daemons (it
// stops every pod it does not know), so every one is killed when its describe block or the test
// process ends, and a failing test shows what the kubelets it ran said.
import { afterAll, test as bunTest } from "bun:test";
import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { freePortNumber } from "../../lib/testing/ports.ts";
import { KUBELET_BINARY } from "../../lib/testing/services.ts";

/** Every kubelet spawned by this test process that has not exited yet. */
const live = new Set<KubeletProcess>();
/** Kubelets spawned and not yet forgotten by `test` (it forgets those that exited before a test began). */
let spawned: KubeletProcess[] = [];
let spawnedCount = 0;

const killAll = () => {
  for (const k of live) k.child.kill("SIGKILL");
};
process.on("exit", killAll);
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const)
  process.once(signal, () => {
    killAll();
    process.exit(128 + (signal === "SIGHUP" ? 1 : signal === "SIGINT" ? 2 : 15));
  });

/** A kubelet running in the background, with its output collected. */
export class KubeletProcess {
  readonly child: ChildProcess;
  readonly args: string[];
  /** Order of spawning in this test process. */
  readonly serial = ++spawnedCount;
  output = "";

  /** `command` replaces the compiled binary, e.g. `["deno", "run", "-A", "bin/kubelet.ts"]`. */
  constructor(args: string[], command: string[] = [KUBELET_BINARY]) {
    const [file, ...prefix] = command;
    this.args = args;
    this.child = spawn(file!, [...prefix, ...args], { stdio: ["ignore", "pipe", "pipe"] });
    live.add(this);
    spawned.push(this);
    this.child.once("exit", () => live.delete(this));
    this.child.stdout!.on("data", (d) => (this.output += d));
    this.child.stderr!.on("data", (d) => (this.output += d));
  }

  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Resolves with the exit code after SIGTERM (or `signal`). */
  stop(signal: NodeJS.Signals = "SIGTERM"): Promise<number | null> {
    if (!this.running) return Promise.resolve(this.child.exitCode);
    return new Promise((resolve) => {
      this.child.once("exit", (code) => resolve(code));
      this.child.kill(signal);
    });
  }

  /** The admin token this kubelet generated at start (--admin_token_file, else <root_dir>/admin-token). */
  adminToken(): string {
    const flag = (name: string) => {
      const at = this.args.lastIndexOf(name);
      return at >= 0 ? this.args[at + 1] : undefined;
    };
    const path = flag("--admin_token_file") ?? join(flag("--root_dir") ?? "/var/lib/kubelet", "admin-token");
    return readFileSync(path, "utf8").trim();
  }

  /** The Authorization header of local administration: the admin token, as the operator's tools send it. */
  adminHeaders(): Record<string, string> {
    return { authorization: `Bearer ${this.adminToken()}` };
  }

  /** The tail of what it printed, headed by how it was started. */
  describe(chars = 4000): string {
    const state = this.running ? "running" : `exited ${this.child.exitCode ?? this.child.signalCode}`;
    return `--- kubelet #${this.serial} (pid ${this.child.pid}, ${state}): ${this.args.join(" ")}\n${this.output.slice(-chars)}`;
  }
}

/** A kubelet with its info server on a free loopback port. */
export class Kubelet extends KubeletProcess {
  readonly port: number;

  constructor(args: string[], port: number, command?: string[]) {
    super([...args, "--port", String(port)], command);
    this.port = port;
  }

  url(path: string): string {
    return `http://127.0.0.1:${this.port}${path}`;
  }

  api(path: string, init?: RequestInit): Promise<Response> {
    return fetch(this.url(path), init);
  }

  /** A request with the admin token: what exec, logs, run and pushes need now that loopback opens nothing. */
  admin(path: string, init: RequestInit = {}): Promise<Response> {
    return fetch(this.url(path), {
      ...init,
      headers: { ...(init.headers as Record<string, string>), ...this.adminHeaders() },
    });
  }

  /**
   * Resolves when /healthz answers `status` (200; 401 for a kubelet whose every route needs credentials); fails
   * early, with the output, when the kubelet exits.
   */
  async healthy(timeoutMs = 20_000, status = 200): Promise<void> {
    await this.waitFor(
      `/healthz ${status}`,
      async () => (await this.api("/healthz").catch(() => undefined))?.status === status,
      timeoutMs,
    );
  }

  /** The pod as /pods/{namespace}/{name} reports it, or undefined while the kubelet does not know it. */
  async pod(name: string, namespace = "default"): Promise<ApiPod | undefined> {
    const response = await this.api(`/pods/${namespace}/${name}`).catch(() => undefined);
    return response?.ok ? ((await response.json()) as ApiPod) : undefined;
  }

  /** Waits until the pod's status satisfies `check`, and returns the pod. */
  waitForPod(name: string, what: string, check: (pod: ApiPod) => unknown, timeoutMs = 30_000): Promise<ApiPod> {
    return this.waitFor(
      `pod ${name}: ${what}`,
      async () => {
        const pod = await this.pod(name);
        return pod && check(pod) ? pod : undefined;
      },
      timeoutMs,
    );
  }

  /** `waitFor` that gives up as soon as the kubelet exits (no point waiting out the timeout). */
  waitFor<T>(what: string, check: () => T | Promise<T>, timeoutMs = 30_000): Promise<NonNullable<T>> {
    return waitFor(
      what,
      () => {
        if (!this.running)
          throw new StopWaiting(`the kubelet exited (${this.child.exitCode ?? this.child.signalCode})`);
        return check();
      },
      timeoutMs,
    );
  }
}

/** The parts of a v1 Pod the tests read from /pods. */
export interface ApiPod {
  metadata: { name: string; namespace: string; uid: string };
  status?: {
    phase?: string;
    conditions?: Array<{ type: string; status: string }>;
    initContainerStatuses?: ApiContainerStatus[];
    containerStatuses?: ApiContainerStatus[];
  };
}

export interface ApiContainerStatus {
  name: string;
  ready: boolean;
  started?: boolean;
  restartCount: number;
  containerID?: string;
  state?: {
    running?: { startedAt?: string };
    waiting?: { reason?: string; message?: string };
    terminated?: { exitCode: number; reason?: string };
  };
  lastState?: { terminated?: { exitCode: number; reason?: string } };
}

/** Starts a kubelet with `args` and its info server on a free port; resolves once /healthz answers (200 unless
 *  `healthzStatus` says otherwise). */
export async function startKubelet(
  args: string[],
  options: { command?: string[]; healthyWithinMs?: number; healthzStatus?: number } = {},
) {
  const kubelet = new Kubelet(args, await freePortNumber(), options.command);
  await kubelet.healthy(options.healthyWithinMs, options.healthzStatus);
  return kubelet;
}

/** Kills (SIGKILL) every kubelet still running: the end of a describe block, a test's clean-up. */
export async function killLiveKubelets(): Promise<void> {
  await Promise.all([...live].map((k) => k.stop("SIGKILL")));
}

/**
 * Registers, in the calling describe block, the kill of every kubelet still running at its end,
 * so a test that failed before its own stop leaves nothing managing the shared daemons.
 */
export function killKubeletsAfterAll(): void {
  afterAll(killLiveKubelets);
}

/** An error `waitFor` passes on at once instead of retrying. */
class StopWaiting extends Error {}

/** Polls `check` every 100 ms until it returns a truthy value or `timeoutMs` passes. */
export async function waitFor<T>(
  what: string,
  check: () => T | Promise<T>,
  timeoutMs = 30_000,
): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value) return value as NonNullable<T>;
    } catch (error) {
      if (error instanceof StopWaiting) throw new Error(`gave up waiting for ${what}: ${error.message}`);
      last = error;
    }
    if (Date.now() > deadline)
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${last}` : ""}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * bun's `test`, but a failure also shows the output of every kubelet that ran during the test (the
 * log says why a pod never started; the assertion only that it did not).
 */
export function test(name: string, fn: () => unknown, timeoutMs?: number): void {
  bunTest(
    name,
    async () => {
      // Kubelets that exited before this test cannot have taken part in it.
      spawned = spawned.filter((k) => k.running);
      const involved = new Set(spawned);
      const first = spawnedCount + 1;
      try {
        await fn();
      } catch (error) {
        for (const k of spawned) if (k.serial >= first) involved.add(k);
        if (involved.size && error instanceof Error)
          error.message += `\n${[...involved].map((k) => k.describe()).join("\n")}`;
        throw error;
      }
    },
    timeoutMs,
  );
}
