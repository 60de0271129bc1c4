// Hollow nodes (kubemark's idea): many real kubelets in this one process, each runKubelet as `kubelet
// run --container_runtime fake` would start it (etcd source, store, sync loop, fleet reporter, info
// server), with its own root dir, name and labels, against one etcd. Only the runtime is in memory.
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import type { KubeletConfig } from "../config/config-types.ts";
import { resolveConfig } from "../config/config.ts";
import { runKubelet } from "../kubelet.ts";
import { silentLogger } from "../log.ts";

export interface HollowFleetOptions {
  /** etcd client URLs. */
  endpoints: string[];
  /** Each node gets `<rootDir>/<name>`. */
  rootDir: string;
  /** Node names: `<prefix><index>` (default "hollow-"), index from `first` (default 0). */
  prefix?: string;
  first?: number;
  count: number;
  /** --node_labels of node `index`. */
  labels?: (index: number) => Record<string, string>;
  /** Other settings by config key, as raw flag values (e.g. { nodeStatusUpdateFrequency: "1s" }). */
  flags?: Partial<Record<keyof KubeletConfig, string>>;
  /** Nodes started at once (default 10): start-up is the costly part. */
  concurrency?: number;
}

export interface HollowFleet {
  names: string[];
  /** Stops every node (each kubelet's SIGTERM path) and waits for them. */
  stop(): Promise<void>;
}

/** The config `kubelet run --container_runtime fake` would resolve for one hollow node. */
export function hollowConfig(name: string, options: HollowFleetOptions, index: number): KubeletConfig {
  const rootDir = join(options.rootDir, name);
  mkdirSync(rootDir, { recursive: true });
  const labels = Object.entries(options.labels?.(index) ?? {}).map(([k, v]) => `${k}=${v}`);
  return resolveConfig({
    containerRuntime: "fake",
    hostnameOverride: name,
    rootDir,
    etcdServers: options.endpoints.join(","),
    port: "0",
    healthzPort: "0",
    cgroupsPerQos: "false",
    enforceNodeAllocatable: "none",
    ...(labels.length ? { nodeLabels: labels.join(",") } : {}),
    ...options.flags,
  }).config;
}

/** Starts `count` hollow nodes in this process, `concurrency` at a time. */
export async function startHollowFleet(options: HollowFleetOptions): Promise<HollowFleet> {
  const stop = new AbortController();
  const first = options.first ?? 0;
  const names = Array.from({ length: options.count }, (_, i) => `${options.prefix ?? "hollow-"}${first + i}`);
  const running: Array<Promise<void>> = [];
  const failures: Error[] = [];
  const concurrency = options.concurrency ?? 10;
  for (const [i, name] of names.entries()) {
    const config = hollowConfig(name, options, first + i);
    running.push(
      runKubelet(config, { log: silentLogger, signal: stop.signal }).catch((e: Error) => void failures.push(e)),
    );
    // A pause after each batch lets the batch's start-up (etcd connections, first sync) run before the next.
    if ((i + 1) % concurrency === 0) await new Promise((resolve) => setTimeout(resolve, 100));
  }
  if (failures.length > 0) throw failures[0];
  return {
    names,
    async stop() {
      stop.abort();
      await Promise.all(running);
    },
  };
}
