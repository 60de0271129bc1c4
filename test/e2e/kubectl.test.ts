// The machine's kubectl (and the official Python client) against the compiled kubelet's Kubernetes API on its TLS
// port, on each runtime of the matrix: discovery, get pods in every form, get -w, create/apply/replace/delete going
// to the push source, and the refusal that names the file a file-sourced pod is edited in.
import { afterAll, beforeAll, expect } from "bun:test";
import { spawn, spawnSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { freePortNumber } from "../../lib/testing/ports.ts";
import { describeOnRuntimes, Kubelet, removeDir, tempDir, test, waitFor } from "./harness.ts";

const KUBECTL = "/usr/bin/kubectl";
const PYTHON = "/usr/bin/python3";
const FILE_POD = "e2e-kubectl-file";
const PUSHED = "e2e-kubectl-pushed";
const READER_TOKEN = "e2e-kubectl-reader-token";

const version = spawnSync(KUBECTL, ["version", "--client"], { encoding: "utf8" });
console.log(`kubectl under test (${KUBECTL}):\n${version.stdout}${version.stderr}`);

describeOnRuntimes("kubectl against the kubelet's API", (services, rt) => {
  const dir = tempDir("kubectl");
  const manifests = join(dir, "manifests");
  const rootDir = join(dir, "root");
  const kubeconfig = join(dir, "kubeconfig");
  let kubelet: Kubelet;

  /** kubectl with this kubelet's kubeconfig; `input` on stdin. */
  const kubectl = (args: string[], input?: string) => {
    const r = spawnSync(KUBECTL, ["--kubeconfig", kubeconfig, ...args], { encoding: "utf8", input, timeout: 30_000 });
    return { code: r.status, out: r.stdout, err: r.stderr };
  };
  const ok = (args: string[], input?: string) => {
    const r = kubectl(args, input);
    if (r.code !== 0) throw new Error(`kubectl ${args.join(" ")} exited ${r.code}: ${r.err}`);
    return r.out;
  };
  const pushed = (
    image: string,
    label: string,
    name = PUSHED,
    grace = 1,
    command = ["sleep", "3600"],
  ) => `apiVersion: v1
kind: Pod
metadata: { name: ${name}, labels: { app: ${label} } }
spec:
  terminationGracePeriodSeconds: ${grace}
  containers:
    - name: main
      image: ${image}
      command: ${JSON.stringify(command)}
`;

  beforeAll(async () => {
    mkdirSync(manifests, { recursive: true });
    const cert = join(dir, "serving.crt");
    const key = join(dir, "serving.key");
    const made = spawnSync(
      "openssl",
      [
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        key,
        "-out",
        cert,
        "-days",
        "2",
        "-subj",
        "/CN=127.0.0.1",
      ].concat(["-addext", "subjectAltName=IP:127.0.0.1"]),
      { encoding: "utf8" },
    );
    if (made.status !== 0) throw new Error(`openssl req: ${made.stderr}`);
    writeFileSync(
      join(manifests, "file-pod.yaml"),
      `apiVersion: v1
kind: Pod
metadata: { name: ${FILE_POD}, labels: { app: filed, tier: back } }
spec:
  terminationGracePeriodSeconds: 1
  containers:
    - name: main
      image: ${services.busybox}
      command: ["sleep", "3600"]
`,
    );
    const port = await freePortNumber();
    // RBAC with testdata/rbac/pod-reader.yaml: the admin token (system:masters) may do everything, "reader" (group
    // pod-readers) may get, list and watch pods, as on a cluster.
    const tokens = join(dir, "tokens");
    writeFileSync(tokens, `${READER_TOKEN},reader,reader-uid,"pod-readers"\n`);
    kubelet = new Kubelet(
      [...rt.runFlags(manifests, rootDir), "--tls_cert_file", cert, "--tls_private_key_file", key].concat(
        ["--auth_token_file", tokens, "--authorization_mode", "RBAC"],
        ["--authorization_policy_file", join(import.meta.dir, "../../testdata/rbac/pod-reader.yaml")],
      ),
      port,
    );
    await kubelet.waitFor("the admin token", () => {
      try {
        return kubelet.adminToken();
      } catch {
        return undefined;
      }
    });
    writeFileSync(
      kubeconfig,
      JSON.stringify({
        apiVersion: "v1",
        kind: "Config",
        clusters: [{ name: "node", cluster: { server: `https://127.0.0.1:${port}`, "certificate-authority": cert } }],
        users: [{ name: "admin", user: { token: kubelet.adminToken() } }],
        contexts: [{ name: "node", context: { cluster: "node", user: "admin" } }],
        "current-context": "node",
      }),
    );
    await kubelet.waitFor("kubectl get pods", () => kubectl(["get", "pods"]).code === 0, 30_000);
    await kubelet.waitFor("the file pod running", () => rt.running(FILE_POD, "main"), 60_000);
  }, 120_000);
  afterAll(async () => {
    await kubelet?.stop("SIGKILL");
    await rt.removePods(FILE_POD, PUSHED);
    removeDir(dir);
  });

  test("kubectl version names the server; get pods -A, -n, -o wide, -l and --field-selector print kube-apiserver's columns", async () => {
    expect(ok(["version"])).toMatch(/Server Version: v1\.\d+\.\d+\+kubelet-/);
    await kubelet.waitFor("the file pod Running in kubectl", () => /Running/.test(ok(["get", "pod", FILE_POD])));
    const all = ok(["get", "pods", "-A"]);
    expect(all.split("\n")[0]).toMatch(/^NAMESPACE\s+NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE$/);
    expect(all).toMatch(new RegExp(`default\\s+${FILE_POD}\\s+1/1\\s+Running\\s+0\\s+\\d+s`));
    expect(ok(["get", "pods", "-n", "default"])).toContain(FILE_POD);
    expect(ok(["get", "pods", "-n", "kube-system"])).toBe("");
    const wide = ok(["get", "pods", "-o", "wide"]);
    expect(wide.split("\n")[0]).toMatch(/IP\s+NODE\s+NOMINATED NODE\s+READINESS GATES$/);
    expect(ok(["get", "pods", "-l", "app=filed,tier in (back,front)", "-o", "name"])).toBe(`pod/${FILE_POD}\n`);
    expect(ok(["get", "pods", "-l", "app!=filed", "-o", "name"])).toBe("");
    expect(
      ok(["get", "pods", "--field-selector", `metadata.name=${FILE_POD},status.phase=Running`, "-o", "name"]),
    ).toBe(`pod/${FILE_POD}\n`);
    const bad = kubectl(["get", "pods", "--field-selector", "spec.bogus=x"]);
    expect(bad.err).toContain("field label not supported: spec.bogus");
  });

  test("kubectl wait --for=condition=Ready returns once the pod is ready (its watch gets headers while quiet)", () => {
    expect(ok(["wait", "--for=condition=Ready", `pod/${FILE_POD}`, "--timeout=20s"])).toBe(
      `pod/${FILE_POD} condition met\n`,
    );
  });

  test("get pods -o yaml and -o json are the pods as /pods gives them, with a resourceVersion", async () => {
    const listed = JSON.parse(ok(["get", "pods", "-o", "json"]));
    const raw = (await (
      await fetch(`https://127.0.0.1:${kubelet.port}/pods`, {
        headers: kubelet.adminHeaders(),
        tls: { rejectUnauthorized: false },
      } as RequestInit)
    ).json()) as { items: Array<{ metadata: { name: string }; spec: unknown }> };
    const fromApi = listed.items.find((p: { metadata: { name: string } }) => p.metadata.name === FILE_POD);
    const fromPods = raw.items.find((p) => p.metadata.name === FILE_POD)!;
    expect(fromApi.spec).toEqual(fromPods.spec);
    expect(Number(fromApi.metadata.resourceVersion)).toBeGreaterThan(0);
    expect(ok(["get", "pod", FILE_POD, "-o", "yaml"])).toContain(`kubernetes.io/config.source: file`);
  });

  test("create -f, apply -f twice with a change, apply --server-side, replace and delete go to the push source", async () => {
    const file = join(dir, "pushed.yaml");
    writeFileSync(file, pushed(services.busybox, "one"));
    expect(ok(["create", "-f", file])).toBe(`pod/${PUSHED} created\n`);
    expect(kubectl(["create", "-f", file]).err).toContain(`pods "${PUSHED}" already exists`);
    await kubelet.waitFor("the pushed pod running", () => rt.running(PUSHED, "main"), 60_000);
    ok(["apply", "-f", file]);
    writeFileSync(file, pushed(services.busybox, "two"));
    expect(ok(["apply", "-f", file])).toBe(`pod/${PUSHED} configured\n`);
    expect(ok(["get", "pod", PUSHED, "-o", "jsonpath={.metadata.labels.app}"])).toBe("two");
    writeFileSync(file, pushed(services.busybox, "three"));
    expect(ok(["apply", "--server-side", "-f", file])).toBe(`pod/${PUSHED} serverside-applied\n`);
    expect(ok(["get", "pod", PUSHED, "-o", "jsonpath={.metadata.labels.app}"])).toBe("three");
    writeFileSync(file, pushed(services.busybox, "four"));
    expect(ok(["replace", "-f", file])).toBe(`pod/${PUSHED} replaced\n`);
    expect(ok(["get", "pods", "-l", "app=four", "-o", "name"])).toBe(`pod/${PUSHED}\n`);
    expect(ok(["delete", "pod", PUSHED])).toBe(`pod "${PUSHED}" deleted\n`);
    await kubelet.waitFor(
      "the pushed pod's containers stopped",
      async () => !(await rt.running(PUSHED, "main")),
      60_000,
    );
    expect(kubectl(["get", "pod", PUSHED]).err).toContain(`Error from server (NotFound): pods "${PUSHED}" not found`);
  }, 180_000);

  test("a file-sourced pod cannot be changed through the API: the error names its file", () => {
    const refused = kubectl(["delete", "pod", FILE_POD]);
    expect(refused.code).not.toBe(0);
    expect(refused.err).toContain("Error from server (Forbidden)");
    expect(refused.err).toContain(`edit the file "${join(manifests, "file-pod.yaml")}"`);
    expect(kubectl(["label", "pod", FILE_POD, "x=y"]).err).toContain("comes from the file source");
  });

  test("under RBAC a pod reader lists pods, and a delete it may not do is refused in kube-apiserver's words", () => {
    const reader = (...args: string[]) => kubectl(["--token", READER_TOKEN, ...args]);
    expect(reader("get", "pods", "-o", "name")).toMatchObject({ code: 0, out: `pod/${FILE_POD}\n` });
    const refused = reader("delete", "pod", FILE_POD);
    expect(refused.err).toContain(
      `Error from server (Forbidden): pods "${FILE_POD}" is forbidden: User "reader" cannot delete resource "pods" in API group "" in the namespace "default"`,
    );
    expect(reader("get", "pods", "-A").code).toBe(0);
  });

  test("a deleted pod shows Terminating until its container is gone; a waiting delete returns once it is", async () => {
    const name = "e2e-kubectl-stubborn";
    ok(["create", "-f", "-"], pushed(services.busybox, "stubborn", name, 5, ["sh", "-c", "trap '' TERM; sleep 3600"]));
    const watcher = spawn(KUBECTL, ["--kubeconfig", kubeconfig, "get", "pod", name, "-w", "--output-watch-events"]);
    let out = "";
    watcher.stdout.on("data", (d) => (out += d));
    watcher.stderr.on("data", (d) => (out += d));
    try {
      await kubelet.waitFor("the stubborn pod running", () => rt.running(name, "main"), 60_000);
      await waitFor("the watch's running row", () => new RegExp(`${name}\\s+1/1\\s+Running`).test(out), 30_000);
      expect(ok(["delete", "pod", name, "--wait=false"])).toBe(`pod "${name}" deleted\n`);
      // READY is 0/1: a container waiting out its grace period is not ready.
      expect(ok(["get", "pod", name])).toMatch(new RegExp(`${name}\\s+\\d/1\\s+Terminating`));
      const marked = JSON.parse(ok(["get", "pod", name, "-o", "json"])).metadata;
      expect(marked.deletionGracePeriodSeconds).toBe(5);
      expect(Date.parse(marked.deletionTimestamp)).toBeGreaterThan(Date.now() - 5000);
      const python = spawnSync(
        PYTHON,
        [
          "-c",
          `from kubernetes import client, config
config.load_kube_config(config_file=${JSON.stringify(kubeconfig)})
pod = client.CoreV1Api().read_namespaced_pod(${JSON.stringify(name)}, "default")
print(pod.metadata.deletion_grace_period_seconds, pod.metadata.deletion_timestamp is not None)`,
        ],
        { encoding: "utf8", timeout: 30_000 },
      );
      expect([python.stdout, python.stderr]).toEqual(["5 True\n", ""]);
      await waitFor(
        "MODIFIED Terminating on the watch",
        () => new RegExp(`MODIFIED\\s+${name}\\s+\\S+\\s+Terminating`).test(out),
        10_000,
      );
      // The container ignores SIGTERM: it is still running, and the waiting delete returns only once it is killed.
      expect(Boolean(await rt.running(name, "main"))).toBe(true);
      expect(ok(["delete", "pod", name])).toBe(`pod "${name}" deleted\n`);
      expect(Boolean(await rt.running(name, "main"))).toBe(false);
      await waitFor("DELETED on the watch", () => new RegExp(`DELETED\\s+${name}`).test(out), 10_000);
      expect(kubectl(["get", "pod", name]).err).toContain(`pods "${name}" not found`);
    } finally {
      watcher.kill();
      await rt.removePods(name);
    }
  }, 180_000);

  test("the legacy /api/v1/watch/ paths stream a watch, authorized as verb watch", () => {
    const reader = (path: string) => kubectl(["--token", READER_TOKEN, "get", "--raw", `${path}?timeoutSeconds=2`]);
    const named = reader(`/api/v1/watch/namespaces/default/pods/${FILE_POD}`);
    expect(named.err).toBe("");
    const events = named.out
      .split("\n")
      .filter((l) => l.trim())
      .map((l) => JSON.parse(l));
    expect(events.map((e) => [e.type, e.object.metadata.name])).toEqual([["ADDED", FILE_POD]]);
    expect(reader("/api/v1/watch/pods").out).toContain(`"name":"${FILE_POD}"`);
  });

  test("get pods -w sees a pod added, changed and deleted", async () => {
    const watcher = spawn(KUBECTL, ["--kubeconfig", kubeconfig, "get", "pods", "-w", "--output-watch-events"]);
    let out = "";
    watcher.stdout.on("data", (d) => (out += d));
    watcher.stderr.on("data", (d) => (out += d));
    try {
      await waitFor("the watch's first rows", () => out.includes(FILE_POD), 20_000);
      ok(["create", "-f", "-"], pushed(services.busybox, "watched"));
      await waitFor("ADDED for the new pod", () => new RegExp(`ADDED\\s+${PUSHED}`).test(out), 30_000);
      await waitFor(
        "MODIFIED as it starts",
        () => new RegExp(`MODIFIED\\s+${PUSHED}\\s+1/1\\s+Running`).test(out),
        60_000,
      );
      ok(["delete", "pod", PUSHED]);
      await waitFor("DELETED for it", () => new RegExp(`DELETED\\s+${PUSHED}`).test(out), 60_000);
    } finally {
      watcher.kill();
    }
  }, 180_000);

  test("get pods --chunk-size=2 and the Python client's limit/_continue page through every pod once", async () => {
    const names = [1, 2, 3, 4, 5].map((i) => `e2e-kubectl-chunk-${i}`);
    for (const name of names) ok(["create", "-f", "-"], pushed(services.busybox, "chunked", name));
    try {
      const listed = ok(["get", "pods", "--chunk-size=2", "-o", "name"]).trim().split("\n");
      expect(listed.filter((l) => l.startsWith("pod/e2e-kubectl-chunk-")).sort()).toEqual(names.map((n) => `pod/${n}`));
      expect(new Set(listed).size).toBe(listed.length);
      const script = `
import json
from kubernetes import client, config
config.load_kube_config(config_file=${JSON.stringify(kubeconfig)})
v1 = client.CoreV1Api()
pages, token = [], None
while True:
    page = v1.list_namespaced_pod("default", label_selector="app=chunked", limit=2, **({"_continue": token} if token else {}))
    pages.append([p.metadata.name for p in page.items])
    token = page.metadata._continue
    if not token:
        break
first = v1.list_namespaced_pod("default", limit=2)
print(json.dumps({"pages": pages, "remaining": first.metadata.remaining_item_count}))
`;
      const run = spawnSync(PYTHON, ["-c", script], { encoding: "utf8", timeout: 30_000 });
      expect(run.stderr).toBe("");
      const result = JSON.parse(run.stdout);
      expect(result.pages).toEqual([names.slice(0, 2), names.slice(2, 4), names.slice(4)]);
      // Five pushed pods and the file pod: two on the first page, four left.
      expect(result.remaining).toBe(4);
    } finally {
      for (const name of names) kubectl(["delete", "pod", name, "--wait=false"]);
      await rt.removePods(...names);
    }
  }, 180_000);

  test("the Python client lists pods in every namespace and streams a watch", () => {
    const script = `
import json, sys
from kubernetes import client, config, watch
config.load_kube_config(config_file=${JSON.stringify(kubeconfig)})
v1 = client.CoreV1Api()
pods = v1.list_pod_for_all_namespaces()
names = [p.metadata.name for p in pods.items]
events = [(e["type"], e["object"].metadata.name) for e in watch.Watch().stream(v1.list_namespaced_pod, namespace="default", timeout_seconds=2)]
print(json.dumps({"names": names, "rv": pods.metadata.resource_version, "events": events}))
`;
    const run = spawnSync(PYTHON, ["-c", script], { encoding: "utf8", timeout: 30_000 });
    expect(run.stderr).toBe("");
    const result = JSON.parse(run.stdout);
    expect(result.names).toContain(FILE_POD);
    expect(Number(result.rv)).toBeGreaterThan(0);
    expect(result.events).toContainEqual(["ADDED", FILE_POD]);
  });
});
