// An in-memory Runtime for unit tests: containers with Docker-like states, recorded calls, and
// hooks to make containers exit, commands answer and calls fail.
import type { Clock } from "../clock.ts";
import { systemClock } from "../clock.ts";
import type { ContainerCreateBody, ContainerDetails, ContainerStats, ContainerSummary, ExecResult, Runtime, RuntimeEvent, RuntimeInfo } from "../container/runtime.ts";
import { KubeletError } from "../types.ts";

interface FakeContainer extends ContainerDetails {
  body: ContainerCreateBody;
  logs: string;
}

export class FakeRuntime implements Runtime {
  readonly calls: Array<{ method: string; args: unknown[] }> = [];
  readonly containers = new Map<string, FakeContainer>();
  readonly images = new Set<string>(["local/busybox:stable", "registry.k8s.io/pause:3.9"]);
  /** Answers exec calls; default: exit 0 with no output. */
  execHandler: (id: string, cmd: string[]) => ExecResult = () => ({ exitCode: 0, stdout: "", stderr: "" });
  available = true;
  #failures = new Map<string, Error>();
  #seq = 0;
  #listeners = new Set<(e: RuntimeEvent) => void>();

  constructor(readonly clock: Clock = systemClock) {}

  /** Makes the next call of `method` throw `error`. */
  failNext(method: keyof Runtime, error: Error): void {
    this.#failures.set(method, error);
  }

  /** A running container exits with `code`. */
  exit(id: string, code: number, options: { oomKilled?: boolean } = {}): void {
    const c = this.#get(id);
    Object.assign(c, { running: false, state: "exited", exitCode: code, oomKilled: options.oomKilled ?? false, finishedAt: new Date(this.clock.now()).toISOString() });
    this.#emit("die", c);
  }

  /** Puts a container the kubelet did not create (or one from an earlier run) in place. */
  seed(body: ContainerCreateBody, state: Partial<ContainerDetails> = {}): string {
    const id = this.#create(body);
    Object.assign(this.containers.get(id)!, state);
    return id;
  }

  #record(method: string, args: unknown[]): void {
    this.calls.push({ method, args });
    if (!this.available) throw new KubeletError("RuntimeUnavailable", `${method}: Docker Engine unreachable`);
    const failure = this.#failures.get(method);
    if (failure) {
      this.#failures.delete(method);
      throw failure;
    }
  }

  #get(id: string): FakeContainer {
    const c = this.containers.get(id);
    if (!c) throw new KubeletError("NotFound", `no such container: ${id}`);
    return c;
  }

  #emit(action: string, c: FakeContainer): void {
    for (const listener of this.#listeners) listener({ action, containerId: c.id, labels: c.labels, time: this.clock.now() });
  }

  #create(body: ContainerCreateBody): string {
    if ([...this.containers.values()].some((c) => c.name === body.name)) throw new KubeletError("Conflict", `name ${body.name} is in use`);
    const id = `fake${String(++this.#seq).padStart(60, "0")}`;
    this.containers.set(id, {
      id, name: body.name, labels: body.Labels, image: body.Image, imageId: `sha256:${body.Image}`, state: "created", createdAt: this.clock.now(),
      running: false, exitCode: 0, oomKilled: false, pid: 0, ipAddress: "", body, logs: "",
    });
    return id;
  }

  async ping() {
    this.#record("ping", []);
  }
  async info(): Promise<RuntimeInfo> {
    this.#record("info", []);
    return { version: "fake", apiVersion: "1.41", os: "Fake OS", kernelVersion: "6.0", cpus: 2, memoryBytes: 2 ** 33, hostname: "fake" };
  }
  async listContainers(options: { podUid?: string } = {}): Promise<ContainerSummary[]> {
    this.#record("listContainers", [options]);
    return [...this.containers.values()].filter((c) => c.name.startsWith("k8s_") && c.labels["io.kubernetes.pod.uid"] && (!options.podUid || c.labels["io.kubernetes.pod.uid"] === options.podUid)).map(({ id, name, labels, image, imageId, state, createdAt }) => ({ id, name, labels, image, imageId, state, createdAt }));
  }
  async inspectContainer(id: string): Promise<ContainerDetails> {
    this.#record("inspectContainer", [id]);
    const { body: _body, logs: _logs, ...details } = this.#get(id);
    return structuredClone(details);
  }
  async createContainer(body: ContainerCreateBody): Promise<string> {
    this.#record("createContainer", [body]);
    if (!this.images.has(body.Image)) throw new KubeletError("NotFound", `No such image: ${body.Image}`);
    const id = this.#create(body);
    this.#emit("create", this.containers.get(id)!);
    return id;
  }
  async startContainer(id: string): Promise<void> {
    this.#record("startContainer", [id]);
    const c = this.#get(id);
    Object.assign(c, { running: true, state: "running", startedAt: new Date(this.clock.now()).toISOString(), finishedAt: undefined, exitCode: 0 });
    this.#emit("start", c);
  }
  async stopContainer(id: string, graceSeconds: number): Promise<void> {
    this.#record("stopContainer", [id, graceSeconds]);
    const c = this.containers.get(id);
    if (c?.running) this.exit(id, 137);
  }
  async removeContainer(id: string): Promise<void> {
    this.#record("removeContainer", [id]);
    const c = this.containers.get(id);
    if (!c) return;
    this.containers.delete(id);
    this.#emit("destroy", c);
  }
  async imageId(ref: string): Promise<string | undefined> {
    this.#record("imageId", [ref]);
    return this.images.has(ref) ? `sha256:${ref}` : undefined;
  }
  async pullImage(ref: string): Promise<void> {
    this.#record("pullImage", [ref]);
    this.images.add(ref);
  }
  async exec(id: string, cmd: string[]): Promise<ExecResult> {
    this.#record("exec", [id, cmd]);
    this.#get(id);
    return this.execHandler(id, cmd);
  }
  async *logs(id: string): AsyncIterable<Uint8Array> {
    this.#record("logs", [id]);
    yield new TextEncoder().encode(this.#get(id).logs);
  }
  /** Sets what logs() returns for a container. */
  setLogs(id: string, text: string): void {
    this.#get(id).logs = text;
  }
  async stats(id: string): Promise<ContainerStats> {
    this.#record("stats", [id]);
    this.#get(id);
    return { time: new Date(this.clock.now()).toISOString(), cpuUsageNanoseconds: 1e9, systemCpuNanoseconds: 0, memoryUsageBytes: 2 ** 20, memoryWorkingSetBytes: 2 ** 19, memoryLimitBytes: 0, networkRxBytes: 10, networkTxBytes: 20, pids: 1 };
  }
  async *events(signal: AbortSignal): AsyncIterable<RuntimeEvent> {
    const queue: RuntimeEvent[] = [];
    let wake: (() => void) | undefined;
    const listener = (e: RuntimeEvent) => {
      queue.push(e);
      wake?.();
    };
    this.#listeners.add(listener);
    try {
      while (!signal.aborted) {
        if (queue.length) yield queue.shift()!;
        else await new Promise<void>((resolve) => {
          wake = resolve;
          signal.addEventListener("abort", () => resolve(), { once: true });
        });
      }
    } finally {
      this.#listeners.delete(listener);
    }
  }
}
