// Throwaway etcd clusters (1 or 3 members) from Debian's etcd binary, on free loopback ports,
// with members that tests can kill and restart by pid.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePortNumber as freePort } from "./ports.ts";

interface Member {
  name: string;
  clientUrl: string;
  peerUrl: string;
  process?: ChildProcess;
}

export interface EtcdCluster {
  /** Client URLs of every member. */
  endpoints: string[];
  kill(member: number): Promise<void>;
  restart(member: number): Promise<void>;
  stop(): Promise<void>;
}

async function healthy(url: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const ok = await fetch(`${url}/health`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`etcd member ${url} did not become healthy`);
}

export async function startEtcdCluster(size: 1 | 3): Promise<EtcdCluster> {
  const dir = mkdtempSync(join(tmpdir(), "kubelet-etcd-"));
  const members: Member[] = [];
  for (let i = 0; i < size; i++) {
    members.push({
      name: `m${i}`,
      clientUrl: `http://127.0.0.1:${await freePort()}`,
      peerUrl: `http://127.0.0.1:${await freePort()}`,
    });
  }
  const initialCluster = members.map((m) => `${m.name}=${m.peerUrl}`).join(",");
  const launch = (m: Member) => {
    m.process = spawn(
      "etcd",
      [
        "--name",
        m.name,
        "--data-dir",
        join(dir, m.name),
        "--listen-client-urls",
        m.clientUrl,
        "--advertise-client-urls",
        m.clientUrl,
        "--listen-peer-urls",
        m.peerUrl,
        "--initial-advertise-peer-urls",
        m.peerUrl,
        "--initial-cluster",
        initialCluster,
        "--initial-cluster-state",
        "new",
        "--heartbeat-interval",
        "50",
        "--election-timeout",
        "500",
      ],
      { stdio: "ignore" },
    );
  };
  const kill = async (m: Member) => {
    const child = m.process;
    if (!child || child.exitCode !== null) return;
    await new Promise((resolve) => {
      child.once("exit", resolve);
      child.kill("SIGKILL");
    });
    m.process = undefined;
  };
  members.forEach(launch);
  await Promise.all(members.map((m) => healthy(m.clientUrl, 20_000)));
  return {
    endpoints: members.map((m) => m.clientUrl),
    kill: (i) => kill(members[i]!),
    async restart(i) {
      launch(members[i]!);
      await healthy(members[i]!.clientUrl, 20_000);
    },
    async stop() {
      await Promise.all(members.map(kill));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Puts a key through etcd's JSON gateway. */
export async function put(endpoint: string, key: string, value: string): Promise<void> {
  const response = await fetch(`${endpoint}/v3/kv/put`, {
    method: "POST",
    body: JSON.stringify({ key: btoa(key), value: btoa(value) }),
  });
  if (!response.ok) throw new Error(`put ${key}: ${response.status}`);
}

/** Deletes a key through etcd's JSON gateway. */
export async function remove(endpoint: string, key: string): Promise<void> {
  await fetch(`${endpoint}/v3/kv/deleterange`, { method: "POST", body: JSON.stringify({ key: btoa(key) }) });
}

/** Retries a put until some member accepts it (leader elections take a moment after a kill). */
export async function putSomewhere(endpoints: string[], key: string, value: string): Promise<void> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    for (const endpoint of endpoints) {
      if (
        await put(endpoint, key, value).then(
          () => true,
          () => false,
        )
      )
        return;
    }
    if (Date.now() > deadline) throw new Error("no etcd member accepted the put");
    await new Promise((r) => setTimeout(r, 100));
  }
}
