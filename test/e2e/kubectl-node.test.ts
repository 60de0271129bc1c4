// The node's side of the Kubernetes API with the machine's real kubectl, over TLS (the self-signed serving
// certificate) on Docker and on containerd: `kubelet kubeconfig` then kubectl get/describe nodes, events,
// namespaces, ConfigMaps (created, applied and deleted through the push source), Secrets (readable only with
// authorization for secrets), kubectl top pod/node; and `kubelet get`/`kubelet describe` printing what kubectl does.
// kubectl needs discovery (/api, /apis), which apiserver/discovery.ts serves.
import { afterAll, beforeAll, expect } from "bun:test";
import { spawn, spawnSync } from "node:child_process";
import { chmodSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createTestCa } from "../../lib/testing/certificates.ts";
import { KUBELET_BINARY } from "../../lib/testing/services.ts";
import {
  describeOnRuntimes,
  freePort,
  Kubelet,
  removeDir,
  runBinary,
  staticPodNode,
  tempDir,
  test,
} from "./harness.ts";

const KUBECTL = "/usr/bin/kubectl";
const version = spawnSync(KUBECTL, ["version", "--client"], { encoding: "utf8" });
console.log(`kubectl under test: ${KUBECTL}: ${version.stdout.trim().split("\n")[0]}`);

describeOnRuntimes("kubectl against the node's API", (services, rt) => {
  const node = staticPodNode("kubectl-node", services, rt, ["web", "late"]);
  const dir = tempDir("kubectl-node");
  const kubeconfig = join(dir, "kubeconfig");
  const reader = join(dir, "reader.kubeconfig");
  let kubelet: Kubelet;
  let flags: string[];
  afterAll(() => removeDir(dir));

  /** kubectl with the written kubeconfig (or `config`). */
  const kubectl = (args: string[], config = kubeconfig) => {
    const result = spawnSync(KUBECTL, args, {
      encoding: "utf8",
      env: { ...process.env, KUBECONFIG: config },
      timeout: 60_000,
    });
    return { code: result.status, out: result.stdout, err: result.stderr };
  };
  /** Output with its times, ages and alignment (which follows their widths) made comparable between two reads. */
  const normalized = (text: string) =>
    text
      .replace(/\w{3}, \d\d \w{3} \d{4} \d\d:\d\d:\d\d \+0000/g, "TIME")
      .replace(/\b\d+[smhd](\d+[sm])?\b/g, "AGE")
      .replace(/[ \t]+/g, " ");
  /** `kubelet <args>` with the node's flags. */
  const kubeletCli = (...args: string[]) => runBinary([...args, ...flags]);

  beforeAll(async () => {
    const ca = createTestCa(dir, "clients");
    // A ConfigMap from the manifest directory (the file source) beside the pod that mounts it.
    writeFileSync(
      join(node.manifests, "site.yaml"),
      "apiVersion: v1\nkind: ConfigMap\nmetadata: { name: site }\ndata: { index.html: hello }\n",
    );
    node.write("web", {
      terminationGracePeriodSeconds: 1,
      containers: [
        {
          name: "app",
          image: services.busybox,
          command: ["sh", "-c", "while true; do echo tick; sleep 1; done"],
          volumeMounts: [{ name: "site", mountPath: "/site" }],
        },
      ],
      volumes: [{ name: "site", configMap: { name: "site" } }],
    });
    // A reader allowed ConfigMaps but not Secrets, as an RBAC policy of kube-apiserver would say it.
    writeFileSync(join(dir, "tokens"), "reader-token,reader,reader\n");
    writeFileSync(
      join(dir, "policy.yaml"),
      [
        "apiVersion: rbac.authorization.k8s.io/v1",
        "kind: ClusterRole",
        "metadata: { name: config-reader }",
        "rules:",
        '  - { apiGroups: [""], resources: ["configmaps", "namespaces"], verbs: ["get", "list"] }',
        "---",
        "apiVersion: rbac.authorization.k8s.io/v1",
        "kind: ClusterRoleBinding",
        "metadata: { name: config-reader }",
        "roleRef: { apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: config-reader }",
        "subjects: [{ kind: User, apiGroup: rbac.authorization.k8s.io, name: reader }]",
        "",
      ].join("\n"),
    );
    const tls = [
      "--client_ca_file",
      ca.caFile,
      "--auth_token_file",
      join(dir, "tokens"),
      "--authorization_mode",
      "RBAC",
      "--authorization_policy_file",
      join(dir, "policy.yaml"),
    ];
    // node.start() waits on plain-HTTP /healthz: this kubelet serves TLS only, so it is waited on through the CLI.
    kubelet = new Kubelet(
      ["run", "-c", node.manifests, ...rt.flags(node.rootDir), "--network_container_image", services.pause, ...tls],
      await freePort(),
    );
    flags = [
      "--root_dir",
      node.rootDir,
      "--port",
      String(kubelet.port),
      "--client_ca_file",
      ca.caFile,
      "--config_file=",
    ];
    await kubelet.waitFor("the API over TLS", () => kubeletCli("get", "nodes").code === 0, 30_000);
  });

  /** Waits until the pod's container has started (its Started event), read through the CLI. */
  const started = () =>
    kubelet.waitFor("the pod's Started event", () => kubeletCli("get", "events").stdout.includes("Started"), 60_000);

  test("kubelet kubeconfig writes a 0600 kubeconfig with which the machine's kubectl lists the node Ready", async () => {
    const written = kubeletCli("kubeconfig", "--write", kubeconfig);
    expect(written.code).toBe(0);
    expect(statSync(kubeconfig).mode & 0o777).toBe(0o600);
    const nodes = kubectl(["get", "nodes"]);
    expect(nodes.err).toBe("");
    expect(nodes.out).toMatch(/^NAME +STATUS +ROLES +AGE +VERSION\n\S+ +Ready +<none> +\S+ +v\d/);
  });

  test("kubectl get nodes -o wide shows the node's address, OS image, kernel and container runtime", () => {
    const wide = kubectl(["get", "nodes", "-o", "wide"]);
    expect(wide.out).toMatch(/INTERNAL-IP +EXTERNAL-IP +OS-IMAGE +KERNEL-VERSION +CONTAINER-RUNTIME\n/);
    expect(wide.out).toContain(rt.kind === "docker" ? "docker://" : "containerd://");
  });

  test("kubelet get nodes prints what kubectl get nodes prints", () => {
    const strip = (text: string) => text.replace(/ \d+[smhd]\w* /g, " AGE ");
    expect(strip(kubeletCli("get", "nodes", "-o", "wide").stdout)).toBe(
      strip(kubectl(["get", "nodes", "-o", "wide"]).out),
    );
  });

  test("kubectl describe node shows the node's conditions, capacity, system info and pods", async () => {
    await started();
    const name = kubectl(["get", "nodes", "-o", "name"]).out.trim().replace("node/", "");
    const described = kubectl(["describe", "node", name]);
    expect(described.err).toBe("");
    expect(described.out).toMatch(/Conditions:\n +Type +Status/);
    expect(described.out).toMatch(/ Ready +True /);
    expect(described.out).toMatch(/System Info:\n/);
    expect(described.out).toMatch(/Non-terminated Pods: +\(1 in total\)/);
    expect(normalized(kubeletCli("describe", "node", name).stdout)).toBe(normalized(described.out));
  });

  test("kubectl get events lists the pod's events; describe pod's field selectors pick them", async () => {
    await started();
    const events = kubectl(["get", "events", "-A"]);
    expect(events.out).toMatch(/^NAMESPACE +LAST SEEN +TYPE +REASON +OBJECT +MESSAGE\n/);
    expect(events.out).toMatch(/default +\S+ +Normal +Started +pod\/web +Started container app/);
    const selected = kubectl([
      "get",
      "events",
      "--field-selector",
      "involvedObject.kind=Pod,involvedObject.name=web,reason=Started",
      "-o",
      "name",
    ]);
    expect(selected.out.trim().split("\n")).toHaveLength(1);
  });

  test("kubectl get events -w streams the events recorded after its list", async () => {
    const watch = spawn(KUBECTL, ["get", "events", "-w", "-o", "name"], {
      env: { ...process.env, KUBECONFIG: kubeconfig },
    });
    let seen = "";
    watch.stdout.on("data", (d) => (seen += d));
    try {
      await kubelet.waitFor("the watch's list", () => seen.includes("event/web."), 20_000);
      const before = seen.split("\n").length;
      // A ConfigMap the pod needs and the sources do not give: the kubelet records FailedMount events for it.
      node.write("late", {
        containers: [{ name: "app", image: services.busybox, command: ["sleep", "3600"] }],
        volumes: [{ name: "missing", configMap: { name: "absent" } }],
      });
      await kubelet.waitFor(
        "a new event on the watch",
        () => seen.includes("event/late.") && seen.split("\n").length > before,
        30_000,
      );
    } finally {
      watch.kill();
      rmSync(join(node.manifests, "late.yaml"));
    }
  });

  test("kubectl get ns lists the built-in namespaces and the pods', all Active", () => {
    const namespaces = kubectl(["get", "ns"]).out;
    for (const ns of ["default", "kube-public", "kube-system"])
      expect(namespaces).toMatch(new RegExp(`^${ns} +Active `, "m"));
  });

  test("kubectl gets the file's ConfigMap, creates, applies and deletes its own, and is told where a file's lives", () => {
    expect(kubectl(["get", "cm"]).out).toMatch(/^site +1 +\S+$/m);
    expect(kubectl(["create", "cm", "made", "--from-literal=a=b"]).out).toBe("configmap/made created\n");
    expect(kubectl(["get", "cm", "made", "-o", "jsonpath={.data.a}"]).out).toBe("b");
    writeFileSync(
      join(dir, "applied.yaml"),
      "apiVersion: v1\nkind: ConfigMap\nmetadata: { name: applied }\ndata: { x: '1' }\n",
    );
    expect(kubectl(["apply", "-f", join(dir, "applied.yaml")]).out).toBe("configmap/applied created\n");
    writeFileSync(
      join(dir, "applied.yaml"),
      "apiVersion: v1\nkind: ConfigMap\nmetadata: { name: applied }\ndata: { x: '2' }\n",
    );
    expect(kubectl(["apply", "-f", join(dir, "applied.yaml")]).out).toBe("configmap/applied configured\n");
    expect(kubectl(["get", "cm", "applied", "-o", "jsonpath={.data.x}"]).out).toBe("2");
    expect(kubectl(["delete", "cm", "made"]).out).toBe('configmap "made" deleted\n');
    expect(kubectl(["get", "cm", "made"]).err).toBe('Error from server (NotFound): configmaps "made" not found\n');
    const refused = kubectl(["delete", "cm", "site"]);
    expect(refused.code).not.toBe(0);
    expect(refused.err).toBe(
      `Error from server (Forbidden): configmaps "site" is forbidden: ConfigMap default/site comes from the file source; the API changes only ConfigMaps pushed over HTTP: edit the file "${join(node.manifests, "site.yaml")}" instead\n`,
    );
  });

  test("kubectl gets Secrets; a caller allowed ConfigMaps only is refused Secrets as the API server refuses them", () => {
    expect(kubectl(["create", "secret", "generic", "db", "--from-literal=password=s3cret"]).out).toBe(
      "secret/db created\n",
    );
    expect(kubectl(["get", "secrets"]).out).toMatch(/^db +Opaque +1 +\S+$/m);
    writeFileSync(
      reader,
      kubectl(["config", "view", "--raw", "-o", "json"]).out.replace(/"token": "[^"]+"/, '"token": "reader-token"'),
    );
    expect(kubectl(["get", "cm"], reader).out).toMatch(/^site /m);
    const refused = kubectl(["get", "secrets"], reader);
    expect(refused.err).toBe(
      'Error from server (Forbidden): secrets is forbidden: User "reader" cannot list resource "secrets" in API group "" in the namespace "default"\n',
    );
  });

  test("kubectl --chunk-size=1 and the Python client's limit/_continue page namespaces, ConfigMaps, Secrets, events and nodes", () => {
    for (const name of ["paged-1", "paged-2"]) {
      expect(kubectl(["create", "cm", name, "--from-literal=a=b"]).code).toBe(0);
      expect(kubectl(["create", "secret", "generic", name, "--from-literal=a=b"]).code).toBe(0);
    }
    const resources = { namespaces: 3, configmaps: 3, secrets: 3, events: 2, nodes: 1 };
    const names = (resource: string, ...extra: string[]) => {
      const r = kubectl(["get", resource, "-A", "-o", "name", ...extra]);
      expect(r.code).toBe(0);
      return { names: r.out.trim().split("\n"), log: r.err };
    };
    /** Every name listed both before and after the paged walk is in it once; nothing else is (events may come). */
    const walkedOnce = (walked: string[], before: string[], after: string[]) => {
      expect(new Set(walked).size).toBe(walked.length);
      for (const name of before) if (after.includes(name)) expect(walked).toContain(name);
      for (const name of walked) expect([...before, ...after]).toContain(name);
    };
    for (const [resource, least] of Object.entries(resources)) {
      const before = names(resource).names;
      const paged = names(resource, "--chunk-size=1", "-v=6");
      walkedOnce(paged.names, before, names(resource).names);
      expect(before.length).toBeGreaterThanOrEqual(least);
      expect(paged.log).toMatch(new RegExp(`GET https://\\S+/api/v1/${resource}\\?limit=1 200 OK`));
      if (least > 1)
        expect(paged.log).toMatch(new RegExp(`GET https://\\S+/api/v1/${resource}\\?continue=\\S+&limit=1 200 OK`));
    }
    // The serving certificate names the node, not 127.0.0.1: the client checks it by the kubeconfig's tls-server-name.
    const serverName = kubectl(["config", "view", "-o", "jsonpath={.clusters[0].cluster.tls-server-name}"]).out;
    const script = `
import json
from kubernetes import client, config
c = client.Configuration()
config.load_kube_config(config_file=${JSON.stringify(kubeconfig)}, client_configuration=c)
c.assert_hostname = ${JSON.stringify(serverName)}
v1 = client.CoreV1Api(client.ApiClient(c))
out = {}
for resource, lister in [("namespaces", v1.list_namespace), ("configmaps", v1.list_config_map_for_all_namespaces),
                         ("secrets", v1.list_secret_for_all_namespaces), ("events", v1.list_event_for_all_namespaces),
                         ("nodes", v1.list_node)]:
    before = [o.metadata.name for o in lister().items]
    walked, token, first = [], None, None
    for _ in range(100):
        page = lister(limit=1, **({"_continue": token} if token else {}))
        first = first or page
        walked += [o.metadata.name for o in page.items]
        token = page.metadata._continue
        if not token:
            break
    after = [o.metadata.name for o in lister().items]
    out[resource] = {"before": before, "walked": walked, "after": after, "remaining": first.metadata.remaining_item_count}
print(json.dumps(out))
`;
    const run = spawnSync("/usr/bin/python3", ["-c", script], { encoding: "utf8", timeout: 60_000 });
    expect(run.stderr).toBe("");
    const listed = JSON.parse(run.stdout);
    for (const [resource, least] of Object.entries(resources)) {
      const { before, walked, after, remaining } = listed[resource];
      walkedOnce(walked, before, after);
      expect(before.length).toBeGreaterThanOrEqual(least);
      if (least > 1) expect(remaining).toBeGreaterThanOrEqual(least - 1);
    }
  });

  test("kubectl top pod and top node show the usage the kubelet measured", async () => {
    // A CPU rate needs two collections of the resource analyzer (every 10 s).
    await kubelet.waitFor("pod metrics", () => /^web +\d+m +\d+Mi/m.test(kubectl(["top", "pod"]).out), 60_000);
    expect(kubectl(["top", "pod", "--containers"]).out).toMatch(/^web +app +\d+m +\d+Mi/m);
    expect(kubectl(["top", "node"]).out).toMatch(/^NAME +CPU\(cores\) +CPU(%)? ?\S* +MEMORY\(bytes\)/);
    expect(kubectl(["top", "node"]).out.split("\n")[1]).toMatch(/^\S+ +\d+m +\d+% +\d+Mi +\d+%/);
  });

  test("kubelet get pods and kubelet describe pod print what kubectl prints", () => {
    const strip = (text: string) => text.replace(/\b\d+(s|m|h|d)(\d+(s|m))?\b/g, "T");
    expect(strip(kubeletCli("get", "pods").stdout)).toBe(strip(kubectl(["get", "pods"]).out));
    const described = kubeletCli("describe", "pod", "web").stdout;
    expect(described).toMatch(/^Name: +web\nNamespace: +default\n/);
    expect(described).toMatch(/Events:\n +Type +Reason +Age +From +Message\n/);
    expect(normalized(described)).toBe(normalized(kubectl(["describe", "pod", "web"]).out));
  });

  test("kubelet get reads nodes, events, namespaces and ConfigMaps as kubectl's table, -A and -o yaml", () => {
    expect(kubeletCli("get", "events").stdout).toMatch(/^LAST SEEN +TYPE +REASON +OBJECT +MESSAGE\n/);
    expect(kubeletCli("get", "ns").stdout).toMatch(/^NAME +STATUS +AGE\ndefault +Active /);
    expect(kubeletCli("get", "cm", "-A").stdout).toMatch(/^NAMESPACE +NAME +DATA +AGE\ndefault +\S+ +\d+ /);
    expect(kubeletCli("get", "cm", "site", "-o", "yaml").stdout).toContain("index.html: hello");
    const none = kubeletCli("get", "cm", "-n", "nowhere");
    expect([none.code, none.stdout, none.stderr]).toEqual([0, "", "No resources found in nowhere namespace.\n"]);
  });

  test("kubelet kubeconfig refuses a caller who cannot read the admin token, saying it is root's", () => {
    // The node's directories open to everyone but the token (0600), as a real /var/lib/kubelet.
    chmodSync(node.rootDir, 0o755);
    chmodSync(join(node.rootDir, "pki"), 0o755);
    const result = spawnSync(
      "setpriv",
      ["--reuid=65534", "--regid=65534", "--clear-groups", KUBELET_BINARY, "kubeconfig", ...flags],
      { encoding: "utf8" },
    );
    expect(result.status).toBe(1);
    expect(result.stderr).toContain(
      `cannot read the admin token "${join(node.rootDir, "admin-token")}": permission denied (it is readable by root only`,
    );
  });
});
