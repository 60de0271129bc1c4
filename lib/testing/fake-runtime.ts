// The in-memory runtime (lib/container/memory/memory-runtime.ts) for unit tests: every call recorded in
// order, and hooks to make calls fail, pulls take time or stall, and containers appear that the
// kubelet did not create.
import { MemoryRuntime, type FakeSeed } from "../container/memory/memory-runtime.ts";
import type { Pod } from "../api/types.ts";
import { LABEL, runtimeError, type ContainerDetails, type PullOptions, type Runtime } from "../container/runtime.ts";

import { createSharedListing, type SharedListing } from "../container/shared-listing.ts";

export type { FakeProgram, FakeSeed } from "../container/memory/memory-runtime.ts";

/** The in-memory Runtime; `calls` records every call in order. */
export class FakeRuntime extends MemoryRuntime {
  /** Every call in order, with the injected clock's time at the call. */
  readonly calls: Array<{ method: string; args: unknown[]; at: number }> = [];
  /** Time each pull takes, on the injected clock; also its size in bytes, for progress messages. */
  pullDelayMs = 0;
  /** A progress message this often during a pull's delay (0 = none). */
  pullProgressEveryMs = 0;
  /** false: pulls report no progress, as on a CRI runtime. */
  reportsPullProgress = true;
  /** Images whose pull, after pullDelayMs of progress, never progresses nor ends until its signal aborts (a stalled registry). */
  readonly stalledPulls = new Set<string>();
  /** false: every call fails with RuntimeUnavailable, as with a stopped daemon. */
  available = true;
  #failures = new Map<string, Error>();

  /** Makes the next call of `method` throw `error`. */
  failNext(method: keyof Runtime, error: Error): void {
    this.#failures.set(method, error);
  }

  /** The last listing a CRI runtime keeps (shared-listing.ts); unset, as on Docker, until keepListing() is called. */
  lastListing?: Runtime["lastListing"];

  /**
   * Keeps a listing of what is here now as the CRI runtime's PLEG keeps its relist's: served by lastListing while
   * current (its two lists are recorded in `calls`).
   */
  async keepListing(): Promise<SharedListing> {
    const shared = createSharedListing(this.clock);
    const token = shared.begin();
    const [sandboxes, containers] = [await this.listPodSandboxes(), await this.listContainers()];
    shared.recordSandboxes(token, () => sandboxes);
    shared.recordContainers(token, () => containers);
    this.lastListing = (maxAgeMs) => shared.current(maxAgeMs);
    return shared;
  }

  /** Puts a container the kubelet did not create (or one from an earlier run) in place. */
  seed(seed: FakeSeed, state: Partial<ContainerDetails> = {}): string {
    const id = this.add(seed, {});
    Object.assign(this.containers.get(id)!, state);
    return id;
  }

  /** Puts a running container `name` of `pod` in place, named and labelled as the kubelet names its own. */
  seedRunning(pod: Pod, name = "app"): string {
    const { name: podName, namespace = "default", uid } = pod.metadata;
    return this.seed(
      {
        name: `k8s_${name}_${podName}_${namespace}_${uid}_0`,
        image: "local/busybox:stable",
        labels: {
          [LABEL.podName]: podName,
          [LABEL.podNamespace]: namespace,
          [LABEL.podUid]: uid,
          [LABEL.containerName]: name,
          [LABEL.restartCount]: "0",
        },
      },
      { running: true, state: "CONTAINER_RUNNING" },
    );
  }

  /** Replaces a container's log. */
  setLogs(id: string, text: string): void {
    this.container(id).logLines = [];
    this.writeLogs(id, text);
  }

  /** A container's whole log. */
  logsOf(id: string): string {
    return this.container(id)
      .logLines.map((l) => l.text)
      .join("");
  }

  protected override called(method: string, args: unknown[]): void {
    this.calls.push({ method, args, at: this.clock.now() });
    if (!this.available)
      throw runtimeError("RuntimeUnavailable", `cannot ${method}: the container runtime is unreachable`);
    const failure = this.#failures.get(method);
    if (failure) {
      this.#failures.delete(method);
      throw failure;
    }
  }

  protected override async pulling(ref: string, options: PullOptions): Promise<void> {
    const { signal, onProgress } = options;
    for (let left = this.pullDelayMs; left > 0; ) {
      const step = this.pullProgressEveryMs > 0 ? Math.min(this.pullProgressEveryMs, left) : left;
      await this.clock.sleep(step, signal);
      left -= step;
      const bytes = this.pullDelayMs - left;
      if (this.reportsPullProgress)
        onProgress?.({
          message: `${ref}: Downloading ${bytes}/${this.pullDelayMs}`,
          layer: ref,
          status: "Downloading",
          current: bytes,
          total: this.pullDelayMs,
          bytes,
        });
    }
    if (this.stalledPulls.has(ref)) {
      await new Promise((_, reject) => {
        if (signal?.aborted) reject(signal.reason);
        signal?.addEventListener("abort", () => reject(signal.reason), { once: true });
      });
    }
  }
}
