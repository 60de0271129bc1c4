// Throwaway etcd clusters (1 or 3 members) from Debian's etcd binary, on free loopback ports,
// with members that tests can kill and restart by pid; with `tls`, as production runs them: https on IP
// endpoints for clients and peers, client certificates required, and etcdctl as root to set up auth.
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createTestCa, type CertificateFiles, type TestCa } from "./certificates.ts";
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
  /** The directory of the members' data (and, with TLS, of the certificates). */
  dir: string;
  kill(member: number): Promise<void>;
  restart(member: number): Promise<void>;
  stop(): Promise<void>;
}

/** A cluster started with `tls`: members and clients authenticate with certificates of `ca`. */
export interface TlsEtcdCluster extends EtcdCluster {
  ca: TestCa;
  /** A client certificate with CN root: etcd's root user once auth is on. */
  root: CertificateFiles;
  /** The CA file members trust for client certificates from their next (re)start on (a CA rotation). */
  trustClientCa(caFile: string): void;
  /** Runs etcdctl as root against the cluster; returns its output, throws with its error. */
  etcdctl(args: string[]): string;
}

async function healthy(url: string, timeoutMs: number, tls?: { ca: string; cert: string; key: string }): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  const init = tls ? ({ tls } as RequestInit) : {};
  while (Date.now() < deadline) {
    const ok = await fetch(`${url}/health`, init).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`etcd member ${url} did not become healthy`);
}

export function startEtcdCluster(size: 1 | 3): Promise<EtcdCluster>;
export function startEtcdCluster(size: 1 | 3, options: { tls: true }): Promise<TlsEtcdCluster>;
export async function startEtcdCluster(size: 1 | 3, options: { tls?: boolean } = {}): Promise<EtcdCluster> {
  const dir = mkdtempSync(join(tmpdir(), "kubelet-etcd-"));
  const scheme = options.tls ? "https" : "http";
  const members: Member[] = [];
  for (let i = 0; i < size; i++) {
    members.push({
      name: `m${i}`,
      clientUrl: `${scheme}://127.0.0.1:${await freePort()}`,
      peerUrl: `${scheme}://127.0.0.1:${await freePort()}`,
    });
  }
  const ca = options.tls ? createTestCa(dir, "etcd-ca") : undefined;
  const server = ca?.server("member", { ips: ["127.0.0.1"], dns: ["localhost"] });
  const root = ca?.client("root");
  let clientCa = ca?.caFile;
  const tlsFlags = () =>
    ca && server
      ? [
          ...["--cert-file", server.certFile, "--key-file", server.keyFile, "--trusted-ca-file", clientCa!],
          "--client-cert-auth",
          ...["--peer-cert-file", server.certFile, "--peer-key-file", server.keyFile],
          ...["--peer-trusted-ca-file", ca.caFile, "--peer-client-cert-auth"],
        ]
      : [];
  const pem = (file: string) => readFileSync(file, "utf8");
  const health = ca && root ? { ca: pem(ca.caFile), cert: pem(root.certFile), key: pem(root.keyFile) } : undefined;
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
        ...tlsFlags(),
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
  await Promise.all(members.map((m) => healthy(m.clientUrl, 20_000, health)));
  const endpoints = members.map((m) => m.clientUrl);
  const cluster: EtcdCluster = {
    endpoints,
    dir,
    kill: (i) => kill(members[i]!),
    async restart(i) {
      launch(members[i]!);
      // Health is asked with the root certificate: after a CA rotation the cluster may no longer trust it.
      if (clientCa === ca?.caFile) await healthy(members[i]!.clientUrl, 20_000, health);
    },
    async stop() {
      await Promise.all(members.map(kill));
      rmSync(dir, { recursive: true, force: true });
    },
  };
  if (!ca || !root) return cluster;
  const secure: TlsEtcdCluster = {
    ...cluster,
    ca,
    root,
    trustClientCa(caFile) {
      clientCa = caFile;
    },
    etcdctl(args) {
      const tlsArgs = ["--cacert", ca.caFile, "--cert", root.certFile, "--key", root.keyFile];
      const run = spawnSync("etcdctl", ["--endpoints", endpoints.join(","), ...tlsArgs, ...args], {
        encoding: "utf8",
        env: { ...process.env, ETCDCTL_API: "3" },
      });
      if (run.status !== 0) throw new Error(`etcdctl ${args.join(" ")}: ${run.stderr.trim()}`);
      return run.stdout;
    },
  };
  return secure;
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

/** Turns on etcd's auth: root exists (no password: its client certificate authenticates it), then auth enable. */
export function enableAuth(cluster: TlsEtcdCluster): void {
  cluster.etcdctl(["user", "add", "root", "--no-password"]);
  cluster.etcdctl(["auth", "enable"]);
}

/**
 * A user limited to what the kubelet of `node` needs: readwrite on the prefix /registry/hosts/<node>/ and on the
 * key /registry/nodes/<node> (left out with `nodeKey: false`). Without a password it is authenticated by the
 * returned client certificate, whose CN is the user's name; with one, by name and password (the certificate
 * then only opens the TLS connection).
 */
export function addNodeUser(
  cluster: TlsEtcdCluster,
  node: string,
  options: { password?: string; nodeKey?: boolean } = {},
): CertificateFiles {
  cluster.etcdctl(["role", "add", node]);
  cluster.etcdctl(["role", "grant-permission", node, "readwrite", `/registry/hosts/${node}/`, "--prefix=true"]);
  if (options.nodeKey !== false)
    cluster.etcdctl(["role", "grant-permission", node, "readwrite", `/registry/nodes/${node}`]);
  cluster.etcdctl(
    options.password ? ["user", "add", `${node}:${options.password}`] : ["user", "add", node, "--no-password"],
  );
  cluster.etcdctl(["user", "grant-role", node, node]);
  return cluster.ca.client(node);
}
