// `kubelet fleet serve` end to end: two compiled kubelets in fleet mode on a three-member etcd (one host, two node
// names), the compiled fleet serve over TLS in front of it, and the machine's kubectl and the Python client
// against that: every node's pods and the nodes, a pod applied with spec.nodeName landing on that node and
// deleted, kubectl logs, exec, attach and port-forward proxied to the pod's node, RBAC refusing a reader's write, and
// lists in pages.
import { afterAll, beforeAll, expect } from "bun:test";
import { spawn, spawnSync } from "node:child_process";
import { connect } from "node:net";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createTestCa } from "../../lib/testing/certificates.ts";
import { writeKubeconfig } from "../../lib/testing/kubeconfig.ts";
import { put, remove, startEtcdCluster, type EtcdCluster } from "../../lib/testing/etcd-cluster.ts";
import { freePortNumber } from "../../lib/testing/ports.ts";
import { describeOnRuntimes, Kubelet, KubeletProcess, removeDir, tempDir, test, waitFor } from "./harness.ts";

const KUBECTL = "/usr/bin/kubectl";
const PYTHON = "/usr/bin/python3";
const NODES = ["e2e-fs-a", "e2e-fs-b"];
const version = spawnSync(KUBECTL, ["version", "--client"], { encoding: "utf8" });
console.log(`kubectl under test (${KUBECTL}):\n${version.stdout}${version.stderr}`);

describeOnRuntimes("kubectl against kubelet fleet serve", (services, rt) => {
  const dir = tempDir("fleet-serve");
  const kubeconfig = join(dir, "kubeconfig");
  const readerConfig = join(dir, "reader-kubeconfig");
  let cluster: EtcdCluster;
  let serve: KubeletProcess | undefined;
  const output = () => serve?.output ?? "";
  const kubelets: Kubelet[] = [];

  const kubectl = (args: string[], input?: string, config = kubeconfig) => {
    const r = spawnSync(KUBECTL, ["--kubeconfig", config, ...args], { encoding: "utf8", input, timeout: 30_000 });
    return { code: r.status, out: r.stdout, err: r.stderr };
  };
  const ok = (args: string[], input?: string) => {
    const r = kubectl(args, input);
    if (r.code !== 0)
      throw new Error(`kubectl ${args.join(" ")} exited ${r.code}: ${r.err}\n--- fleet serve:\n${output()}`);
    return r.out;
  };
  const pod = (name: string, node: string, command: string) => `apiVersion: v1
kind: Pod
metadata: { name: ${name} }
spec:
  nodeName: ${node}
  terminationGracePeriodSeconds: 1
  containers:
    - name: main
      image: ${services.busybox}
      command: ["sh", "-c", ${JSON.stringify(command)}]
`;
  /** The row kubectl get pods -A -o wide prints for a pod, once it is Running and ready (1/1). */
  const runningRow = (name: string) =>
    waitFor(
      `${name} Running in kubectl get pods -A -o wide`,
      () =>
        ok(["get", "pods", "-A", "-o", "wide"])
          .split("\n")
          .find((l) => l.includes(` ${name} `) && / 1\/1\s+Running /.test(l)),
      90_000,
    );

  beforeAll(async () => {
    mkdirSync(dir, { recursive: true });
    cluster = await startEtcdCluster(3);
    const ca = createTestCa(dir, "fleet-ca");
    const serving = ca.server("kubelet", { ips: ["127.0.0.1"], dns: ["localhost"] });
    // One admin token for both kubelets: the credential fleet serve shows them.
    const nodeToken = join(dir, "node-token");
    writeFileSync(nodeToken, "fleet-serve-node-token-0123456789\n", { mode: 0o600 });
    for (const node of NODES) {
      const rootDir = join(dir, node);
      const manifests = join(dir, `${node}-manifests`);
      mkdirSync(manifests, { recursive: true });
      const kubelet = new Kubelet(
        [
          ...rt.runFlags(manifests, rootDir),
          ...["--etcd_servers", cluster.endpoints.join(","), "--hostname_override", node],
          ...["--tls_cert_file", serving.certFile, "--tls_private_key_file", serving.keyFile],
          ...["--admin_token_file", nodeToken, "--sync_frequency", "2s", "--node_status_update_frequency", "1s"],
          ...["--node_lease_duration", "10s"],
        ],
        await freePortNumber(),
      );
      kubelets.push(kubelet);
    }
    const tokens = join(dir, "tokens.csv");
    writeFileSync(
      tokens,
      'admin-token-0123456789,admin,admin,"system:masters"\nreader-token-0123456789,reader,reader,"pod-readers"\n',
    );
    const fleetCert = ca.server("fleet-serve", { ips: ["127.0.0.1"], dns: ["localhost"] });
    const port = await freePortNumber();
    serve = new KubeletProcess([
      "fleet",
      "serve",
      ...["--etcd-servers", cluster.endpoints.join(","), "--secure-port", String(port)],
      ...["--tls-cert-file", fleetCert.certFile, "--tls-private-key-file", fleetCert.keyFile],
      ...["--token-auth-file", tokens, "--authorization-mode", "RBAC"],
      ...["--authorization-policy-file", join(import.meta.dir, "../../testdata/rbac/pod-reader.yaml")],
      ...["--kubelet-certificate-authority", ca.caFile, "--kubelet-token-file", nodeToken],
      ...["--kubelet-address-override", "127.0.0.1"],
      // Every list paged at the client's limit, however few pods: the tests below page through two.
      ...["--max-unpaged-list", "0"],
    ]);
    writeKubeconfig(kubeconfig, `https://127.0.0.1:${port}`, ca.caFile, "admin-token-0123456789");
    writeKubeconfig(readerConfig, `https://127.0.0.1:${port}`, ca.caFile, "reader-token-0123456789");
    await waitFor("fleet serve listening", () => output().includes("the fleet's API on"), 30_000);
    await waitFor("both nodes registered", () => NODES.every((n) => kubectl(["get", "node", n]).code === 0), 60_000);
  }, 180_000);

  afterAll(async () => {
    await serve?.stop();
    await Promise.all(kubelets.map((k) => k.stop("SIGTERM")));
    await rt.removePods("fs-web-a", "fs-web-b", "fs-echo", "fs-ticker");
    await cluster?.stop();
    removeDir(dir);
  });

  test("get nodes lists both nodes Ready, from their records and leases in etcd", async () => {
    // A node's record can be written before its first lease renewal and its Ready condition: wait for those.
    const ready = (out: string) => NODES.every((node) => new RegExp(`^${node}\\s+Ready\\s`, "m").test(out));
    await waitFor("both nodes Ready", () => ready(ok(["get", "nodes"])), 30_000);
    const out = ok(["get", "nodes"]);
    for (const node of NODES) expect(out).toMatch(new RegExp(`^${node}\\s+Ready\\s`, "m"));
  }, 60_000);

  test("apply -f of a pod with spec.nodeName runs it on that node, and get pods -A -o wide shows every node's pods", async () => {
    expect(ok(["apply", "-f", "-"], pod("fs-web-a", NODES[0]!, "echo hello from a; sleep 3600"))).toContain(
      "pod/fs-web-a created",
    );
    expect(ok(["apply", "-f", "-"], pod("fs-web-b", NODES[1]!, "echo hello from b; sleep 3600"))).toContain(
      "pod/fs-web-b created",
    );
    const a = await runningRow("fs-web-a");
    const b = await runningRow("fs-web-b");
    expect(a).toMatch(new RegExp(`^default\\s+fs-web-a\\s+1/1\\s+Running\\s.*\\s${NODES[0]}\\s`));
    expect(b).toMatch(new RegExp(`^default\\s+fs-web-b\\s+1/1\\s+Running\\s.*\\s${NODES[1]}\\s`));
  }, 150_000);

  test("get pod -o json shows the annotations applied and placed with it, and kubelet.fleet/placed, no node bookkeeping", async () => {
    await runningRow("fs-web-a");
    const { annotations } = JSON.parse(ok(["get", "pod", "fs-web-a", "-o", "json"])).metadata;
    expect(Object.keys(annotations).sort()).toEqual([
      "kubectl.kubernetes.io/last-applied-configuration",
      "kubelet.fleet/placed",
      "kubelet.io/manifest-hash",
    ]);
    expect(annotations["kubelet.fleet/placed"]).toBe("default/fs-web-a");
  }, 60_000);

  test("kubectl logs and exec reach the pod's node through fleet serve", async () => {
    await runningRow("fs-web-b");
    await waitFor("the log line", () => ok(["logs", "fs-web-b"]).includes("hello from b"), 30_000);
    expect(ok(["exec", "fs-web-b", "--", "sh", "-c", "echo exec on $(hostname) ok"])).toContain("ok");
  }, 120_000);

  test("kubectl attach reaches the pod's node through fleet serve and shows what its main process writes now", async () => {
    expect(
      ok(
        ["apply", "-f", "-"],
        pod("fs-ticker", NODES[1]!, "i=0; while true; do i=$((i+1)); echo tick $i; sleep 0.2; done"),
      ),
    ).toContain("pod/fs-ticker created");
    await runningRow("fs-ticker");
    const attach = spawn(KUBECTL, ["--kubeconfig", kubeconfig, "attach", "fs-ticker", "-c", "main"]);
    let said = "";
    attach.stdout.on("data", (d) => (said += d));
    attach.stderr.on("data", (d) => (said += d));
    try {
      // Two consecutive lines: a live stream of what is printed now, not a log replay.
      const first = await waitFor("a line through attach", () => /tick (\d+)/.exec(said)?.[1], 20_000);
      await waitFor("a later line", () => said.includes(`tick ${Number(first) + 2}`), 10_000);
    } finally {
      attach.kill("SIGINT");
      ok(["delete", "pod", "fs-ticker", "--wait=false"]);
    }
  }, 150_000);

  test("a reader may list pods but not delete them (RBAC as a node's), and a wrong token is 401", () => {
    expect(kubectl(["get", "pods", "-A"], undefined, readerConfig).out).toContain("fs-web-a");
    const refused = kubectl(["delete", "pod", "fs-web-a"], undefined, readerConfig);
    expect(refused.err).toContain('pods "fs-web-a" is forbidden: User "reader" cannot delete resource "pods"');
    const stranger = kubectl(["get", "pods", "--token", "not-a-token"]);
    expect(stranger.err).toContain("error: You must be logged in to the server (Unauthorized)");
  });

  test("the Python client lists every node's pods through fleet serve", () => {
    const script = `
import json
from kubernetes import client, config
config.load_kube_config(config_file=${JSON.stringify(kubeconfig)})
pods = client.CoreV1Api().list_pod_for_all_namespaces()
print(json.dumps(sorted([[p.metadata.name, p.spec.node_name] for p in pods.items])))
`;
    const run = spawnSync(PYTHON, ["-c", script], { encoding: "utf8", timeout: 30_000 });
    expect(run.stderr).toBe("");
    const rows = JSON.parse(run.stdout) as string[][];
    expect(rows).toContainEqual(["fs-web-a", NODES[0]!]);
    expect(rows).toContainEqual(["fs-web-b", NODES[1]!]);
  });

  test("kubectl port-forward reaches a host-network pod's port on its node through fleet serve, bytes both ways", async () => {
    const port = await freePortNumber();
    const echo = pod("fs-echo", NODES[0]!, `exec nc -ll -p ${port} -e cat`).replace(
      "  terminationGracePeriodSeconds: 1\n",
      "  terminationGracePeriodSeconds: 1\n  hostNetwork: true\n",
    );
    expect(ok(["apply", "-f", "-"], echo)).toContain("pod/fs-echo created");
    await runningRow("fs-echo");
    const local = await freePortNumber();
    const forward = spawn(KUBECTL, ["--kubeconfig", kubeconfig, "port-forward", "pod/fs-echo", `${local}:${port}`]);
    let said = "";
    forward.stdout.on("data", (d) => (said += d));
    forward.stderr.on("data", (d) => (said += d));
    try {
      await waitFor("the forward listening", () => said.includes("Forwarding from"), 20_000);
      const payload = `${"y".repeat(50_000)}\nend\n`;
      const socket = connect({ host: "127.0.0.1", port: local });
      let reply = "";
      await new Promise<void>((resolve, reject) => {
        socket.on("connect", () => socket.write(payload));
        socket.on("data", (d) => (reply += d).length >= payload.length && socket.destroy());
        socket.on("close", () => resolve());
        socket.on("error", reject);
      });
      expect(reply).toBe(payload);
    } finally {
      forward.kill("SIGINT");
      ok(["delete", "pod", "fs-echo", "--wait=false"]);
    }
  }, 150_000);

  test("kubectl --chunk-size=1 pages through every node's pods, each printed once", async () => {
    await runningRow("fs-web-a");
    await runningRow("fs-web-b");
    const rows = ok(["get", "pods", "-A", "--chunk-size=1", "-v=6"]);
    expect(rows.split("\n").filter((l) => / fs-web-a /.test(l))).toHaveLength(1);
    expect(rows.split("\n").filter((l) => / fs-web-b /.test(l))).toHaveLength(1);
    // -v=6 logs each request: the second page was asked for with the first page's continue token.
    const pages = kubectl(["get", "pods", "-A", "--chunk-size=1", "-v=6"]).err;
    expect(pages).toMatch(/GET https:\/\/\S+\/api\/v1\/pods\?continue=\S+&limit=1 200 OK/);
  }, 150_000);

  test("the Python client pages with limit and _continue, and a forged token is a 400 naming it", () => {
    const script = `
import json
from kubernetes import client, config
from kubernetes.client.rest import ApiException
config.load_kube_config(config_file=${JSON.stringify(kubeconfig)})
api = client.CoreV1Api()
names, token, pages = [], None, 0
while True:
    page = api.list_pod_for_all_namespaces(limit=1, _continue=token)
    pages += 1
    names += [p.metadata.name for p in page.items]
    token = page.metadata._continue
    if not token:
        break
try:
    api.list_pod_for_all_namespaces(limit=1, _continue="forged")
    refused = None
except ApiException as e:
    refused = [e.status, json.loads(e.body)["message"]]
print(json.dumps({"names": names, "pages": pages, "refused": refused}))
`;
    const run = spawnSync(PYTHON, ["-c", script], { encoding: "utf8", timeout: 30_000 });
    expect(run.stderr).toBe("");
    const { names, pages, refused } = JSON.parse(run.stdout) as { names: string[]; pages: number; refused: unknown[] };
    expect(names.filter((n) => n === "fs-web-a" || n === "fs-web-b").sort()).toEqual(["fs-web-a", "fs-web-b"]);
    expect(new Set(names).size).toBe(names.length);
    expect(pages).toBeGreaterThanOrEqual(2);
    expect(refused[0]).toBe(400);
    expect(String(refused[1])).toStartWith("invalid continue token: continue key is not valid");
  });

  test("events page with --chunk-size, and get nodes at 1,000 nodes pages with kubectl's and the Python client's limit", async () => {
    const events = kubectl(["get", "events", "-A", "--chunk-size=1", "-o", "name", "-v=6"]);
    expect([events.code, events.code === 0 ? "" : events.err]).toEqual([0, ""]);
    const eventNames = events.out.trim().split("\n");
    expect(eventNames.length).toBeGreaterThan(1);
    expect(new Set(eventNames).size).toBe(eventNames.length);
    expect(events.err).toMatch(/GET https:\/\/\S+\/api\/v1\/events\?continue=\S+&limit=1 200 OK/);
    // 1,000 node records beside the two kubelets' (no lease: each stays as its record says).
    const many = Array.from({ length: 1000 }, (_, i) => `e2e-fs-many-${String(i).padStart(4, "0")}`);
    const record = (name: string) =>
      JSON.stringify({ metadata: { name }, status: { conditions: [{ type: "Ready", status: "True" }] } });
    for (let i = 0; i < many.length; i += 50)
      await Promise.all(
        many.slice(i, i + 50).map((name) => put(cluster.endpoints[0]!, `/registry/nodes/${name}`, record(name))),
      );
    try {
      const listed = kubectl(["get", "nodes", "--chunk-size=500", "-o", "name", "-v=6"]);
      expect([listed.code, listed.code === 0 ? "" : listed.err]).toEqual([0, ""]);
      const names = listed.out.trim().split("\n");
      expect(new Set(names).size).toBe(names.length);
      expect(names.sort()).toEqual([...many, ...NODES].map((n) => `node/${n}`).sort());
      expect(listed.err.match(/GET https:\/\/\S+\/api\/v1\/nodes\?\S*limit=500 200 OK/g)).toHaveLength(3);
      expect(listed.err).toMatch(/GET https:\/\/\S+\/api\/v1\/nodes\?continue=\S+&limit=500 200 OK/);
      const script = `
import json
from kubernetes import client, config
config.load_kube_config(config_file=${JSON.stringify(kubeconfig)})
api = client.CoreV1Api()
names, token, remaining = [], None, []
while True:
    page = api.list_node(limit=300, _continue=token)
    names += [n.metadata.name for n in page.items]
    remaining.append(page.metadata.remaining_item_count)
    token = page.metadata._continue
    if not token:
        break
print(json.dumps({"names": names, "remaining": remaining}))
`;
      const run = spawnSync(PYTHON, ["-c", script], { encoding: "utf8", timeout: 60_000 });
      expect(run.stderr).toBe("");
      const paged = JSON.parse(run.stdout) as { names: string[]; remaining: Array<number | null> };
      expect(paged.names).toEqual([...many, ...NODES].sort());
      expect(paged.remaining).toEqual([702, 402, 102, null]);
    } finally {
      for (let i = 0; i < many.length; i += 50)
        await Promise.all(
          many.slice(i, i + 50).map((name) => remove(cluster.endpoints[0]!, `/registry/nodes/${name}`)),
        );
    }
  }, 180_000);

  test("delete removes the pod from its node", async () => {
    expect(ok(["delete", "pod", "fs-web-a", "--wait=false"])).toContain('pod "fs-web-a" deleted');
    await waitFor("fs-web-a gone", () => !ok(["get", "pods", "-A"]).includes("fs-web-a"), 60_000);
    await waitFor(
      "fs-web-a's container stopped",
      async () => (await rt.running("fs-web-a", "main")) === undefined,
      30_000,
    );
  }, 90_000);
});
