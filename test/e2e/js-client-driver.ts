// Runs one scenario of the official JavaScript client (@kubernetes/client-node) against a kubelet and prints what it
// saw as JSON lines, for js-client.test.ts. A process of its own: Bun's `undici` is Bun's fetch, which drops the
// dispatcher carrying the kubeconfig's CA, so the client's HTTP calls trust the CA only through NODE_EXTRA_CA_CERTS,
// read when a process starts. Usage: NODE_EXTRA_CA_CERTS=ca.crt bun js-client-driver.ts KUBECONFIG SCENARIO [POD]
import { Writable } from "node:stream";
import { CoreV1Api, KubeConfig, Log, makeInformer, Metrics, Watch, type V1Pod } from "@kubernetes/client-node";

const [kubeconfig, scenario, pod = "", image = ""] = process.argv.slice(2);
const kc = new KubeConfig();
kc.loadFromFile(kubeconfig!);
const api = kc.makeApiClient(CoreV1Api);
const say = (value: unknown) => console.log(JSON.stringify(value));

async function until<T>(what: string, probe: () => T | undefined | Promise<T | undefined>, ms = 30_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(100);
  }
}

const podsInformer = (onList = () => {}) =>
  makeInformer<V1Pod>(kc, "/api/v1/namespaces/default/pods", () => {
    onList();
    return api.listNamespacedPod({ namespace: "default" });
  });

const scenarios: Record<string, () => Promise<void>> = {
  async read() {
    const all = await api.listPodForAllNamespaces();
    const one = await api.readNamespacedPod({ name: pod, namespace: "default" });
    const none = await api.listNamespacedPod({ namespace: "kube-system" });
    const missing = await api.readNamespacedPod({ name: "nope", namespace: "default" }).catch((e) => e);
    say({
      names: all.items.map((p) => `${p.metadata?.namespace}/${p.metadata?.name}`),
      resourceVersion: all.metadata?.resourceVersion,
      containers: one.spec?.containers.map((c) => c.name),
      source: one.metadata?.annotations?.["kubernetes.io/config.source"],
      kubeSystem: none.items.length,
      missing: { code: missing.code, body: JSON.parse(missing.body) },
    });
  },
  async informer() {
    const informer = podsInformer();
    const seen: Array<[string, string, string]> = [];
    const errors: string[] = [];
    const record = (verb: string) => (p: V1Pod) =>
      p.metadata?.name === "jsc-pushed" &&
      seen.push([verb, p.metadata.labels?.step ?? "", p.metadata.resourceVersion!]);
    informer.on("add", record("add"));
    informer.on("update", record("update"));
    informer.on("delete", record("delete"));
    informer.on("error", (e) => errors.push(String(e)));
    await informer.start();
    const listed = informer.list("default").map((p) => p.metadata?.name);
    await api.createNamespacedPod({
      namespace: "default",
      body: {
        metadata: { name: "jsc-pushed", labels: { step: "one" } },
        spec: {
          terminationGracePeriodSeconds: 1,
          containers: [{ name: "main", image, command: ["sleep", "3600"] }],
        },
      },
    });
    await until("add", () => seen.some(([verb]) => verb === "add"));
    await api.patchNamespacedPod({
      name: "jsc-pushed",
      namespace: "default",
      body: [{ op: "replace", path: "/metadata/labels/step", value: "two" }],
    });
    await until("the patched label", () => seen.some(([verb, step]) => verb === "update" && step === "two"));
    await api.deleteNamespacedPod({ name: "jsc-pushed", namespace: "default" });
    await until("delete", () => seen.some(([verb]) => verb === "delete"), 60_000);
    say({ listed, seen, errors, cached: informer.get("jsc-pushed", "default") ?? null });
    await informer.stop();
  },
  async watch() {
    const watch = new Watch(kc);
    const events: Array<[string, any]> = [];
    const request = await watch.watch(
      "/api/v1/namespaces/default/pods",
      { allowWatchBookmarks: true, sendInitialEvents: true, resourceVersionMatch: "NotOlderThan" },
      (phase, obj) => events.push([phase, obj]),
      () => {},
    );
    await until("the bookmark", () => events.some(([phase]) => phase === "BOOKMARK"));
    request.abort();
    const expired: Array<[string, any]> = [];
    let ended = false;
    await watch.watch(
      "/api/v1/namespaces/default/pods",
      { resourceVersion: "1" },
      (phase, obj) => expired.push([phase, obj]),
      () => (ended = true),
    );
    await until("the expired watch's end", () => ended);
    say({
      events: events.map(([phase, obj]) => [phase, obj.metadata?.name ?? null, obj.metadata?.annotations ?? null]),
      expired,
    });
  },
  async relist() {
    let lists = 0;
    const informer = podsInformer(() => lists++);
    // client-node's documented pattern: an informer whose watch failed is started again.
    informer.on("error", () => setTimeout(() => void informer.start().catch(() => {}), 500));
    await informer.start();
    const before = informer.get(pod, "default")?.metadata?.resourceVersion;
    say({ ready: true, lists });
    await until("the relist", () => lists >= 2, 90_000);
    // The relist has begun when listFn is called; its items land when the list comes back.
    const after = await until("the relisted pod", () => {
      const version = informer.get(pod, "default")?.metadata?.resourceVersion;
      return version !== before ? version : undefined;
    });
    say({ lists, before, after });
    await informer.stop();
  },
  async log() {
    let text = "";
    const out = new Writable({
      write(chunk, _encoding, done) {
        text += chunk.toString();
        done();
      },
    });
    const abort = await new Log(kc).log("default", pod, "main", out, { follow: true, tailLines: 1 });
    await until("four lines followed", () => text.split("\n").length > 4);
    abort.abort();
    say({ lines: text.trim().split("\n") });
  },
  async metrics() {
    const metrics = new Metrics(kc);
    const podMetrics = await until(
      "pod metrics",
      async () =>
        (await metrics.getPodMetrics("default").catch(() => undefined))?.items.find((p) => p.metadata.name === pod),
      60_000,
    );
    say({ pod: podMetrics, nodes: (await metrics.getNodeMetrics()).items });
  },
};

await scenarios[scenario!]!();
process.exit(0);
