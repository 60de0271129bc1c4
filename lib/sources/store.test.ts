import { describe, expect, test } from "bun:test";
import { createPodStore, type NotificationMode } from "./store.ts";
import { testConfig, testPod } from "../testing/pods.ts";
import { noopMetrics } from "../metrics.ts";
import type { Pod, PodUpdate, SourceName } from "../api/types.ts";

// Go's table used a pod without containers; Kubernetes requires one, so "more containers" stands in.
const foo = () => testPod("foo");
const fooWithContainers = () =>
  testPod("foo", {
    containers: [
      { name: "a", image: "busybox:1.35" },
      { name: "b", image: "busybox:1.35" },
    ],
  });
const invalidFoo = () => testPod("foo", { containers: [{ name: "c", image: "" }] });

function recorder(mode: NotificationMode, sources: SourceName[] = ["file"]) {
  const store = createPodStore({ mode, sources: [...sources] });
  const updates: PodUpdate[] = [];
  store.subscribe((u) => updates.push(u));
  const seen = () =>
    updates.map(
      (u) => `${u.op} ${u.pods.map((p) => `${p.metadata.name}${p.spec.containers.length > 1 ? "+c" : ""}`).join(",")}`,
    );
  return { store, updates, seen };
}

describe("the Go v0.4 config test table", () => {
  test("Incremental: ADD foo emits ADD foo; an invalid UPDATE emits nothing and keeps foo", () => {
    const { store, seen } = recorder("Incremental");
    store.merge("file", "ADD", [fooWithContainers()]);
    store.merge("file", "UPDATE", [invalidFoo()]);
    expect(seen()).toEqual(["ADD foo+c"]);
    expect(store.mergedState().map((p) => p.metadata.name)).toEqual(["foo"]);
    expect(store.rejected()[0]?.issues[0]?.path).toBe("spec.containers[0].image");
  });

  test("SnapshotAndUpdates: ADD foo emits SET [foo]; ADD foo with containers emits one UPDATE and no SET", () => {
    const { store, seen } = recorder("SnapshotAndUpdates");
    store.merge("file", "ADD", [foo()]);
    store.merge("file", "ADD", [fooWithContainers()]);
    expect(seen()).toEqual(["SET foo", "UPDATE foo+c"]);
  });

  test("Snapshot: the same ends with SET [foo+containers]", () => {
    const { store, seen } = recorder("Snapshot");
    store.merge("file", "ADD", [foo()]);
    store.merge("file", "ADD", [fooWithContainers()]);
    expect(seen()).toEqual(["SET foo", "SET foo+c"]);
  });

  test("Incremental: ADD, UPDATE, REMOVE echo the stored pod", () => {
    const { store, seen, updates } = recorder("Incremental");
    store.merge("file", "ADD", [foo()]);
    store.merge("file", "ADD", [fooWithContainers()]);
    store.merge("file", "REMOVE", [foo()]);
    expect(seen()).toEqual(["ADD foo", "UPDATE foo+c", "REMOVE foo+c"]);
    expect(updates[2]!.pods[0]!.spec.containers).toHaveLength(2);
  });

  test("Incremental: ADD [foo, foo2, foo3] then SET [foo2 changed, foo3, foo4] emits REMOVE foo, ADD foo4, UPDATE foo2", () => {
    const { store, seen } = recorder("Incremental");
    store.merge("file", "ADD", [testPod("foo"), testPod("foo2"), testPod("foo3")]);
    store.merge("file", "SET", [testPod("foo2", { restartPolicy: "Never" }), testPod("foo3"), testPod("foo4")]);
    expect(seen()).toEqual(["ADD foo,foo2,foo3", "REMOVE foo", "ADD foo4", "UPDATE foo2"]);
  });

  for (const mode of ["Snapshot", "SnapshotAndUpdates", "Incremental"] as const) {
    test(`${mode}: a SET with nothing changed emits nothing`, () => {
      const { store, updates } = recorder(mode);
      store.apply("file", { pods: [testPod("a"), testPod("b")], rejected: [] });
      const count = updates.length;
      expect(count).toBeGreaterThan(0); // the first SET did emit: silence below is the store's choice
      store.apply("file", { pods: [testPod("a"), testPod("b")], rejected: [] });
      expect(updates.length).toBe(count);
    });
  }
});

describe("merge store", () => {
  test("SET from a source removes the pods it no longer lists and emits the merged SET", () => {
    const { store, updates } = recorder("SnapshotAndUpdates");
    store.apply("file", { pods: [testPod("a"), testPod("b")], rejected: [] });
    store.apply("file", { pods: [testPod("b")], rejected: [] });
    expect(updates.at(-1)).toMatchObject({ op: "SET", source: "*" });
    expect(updates.at(-1)!.pods.map((p) => p.metadata.name)).toEqual(["b"]);
  });

  test("the first of two pods with the same name in one source wins and the second is reported", () => {
    const { store } = recorder("Snapshot");
    store.apply("file", {
      pods: [
        testPod("a", {}, { origin: "one.yaml" }),
        testPod("a", { restartPolicy: "Never" }, { origin: "two.yaml" }),
      ],
      rejected: [],
    });
    expect(store.mergedState()).toHaveLength(1);
    expect(store.mergedState()[0]!.spec.restartPolicy).toBe("Always");
    expect(store.rejected()).toMatchObject([
      { origin: "two.yaml", pod: "default/a", issues: [{ type: "Duplicate value" }] },
    ]);
  });

  test("a name claimed by two sources stays with the source that claimed it first", () => {
    const { store } = recorder("Snapshot", ["file", "url"] as never);
    store.apply("url", { pods: [testPod("a", {}, { source: "url" })], rejected: [] });
    store.apply("file", { pods: [testPod("a")], rejected: [] });
    expect(store.mergedState().map((p) => p.metadata.annotations["kubernetes.io/config.source"])).toEqual(["url"]);
    expect(store.rejected()[0]).toMatchObject({ source: "file", pod: "default/a" });
    // Once the first source lets go, the other may have it.
    store.apply("url", { pods: [], rejected: [] });
    store.apply("file", { pods: [testPod("a")], rejected: [] });
    expect(store.mergedState().map((p) => p.metadata.annotations["kubernetes.io/config.source"])).toEqual(["file"]);
  });

  test("an invalid edit in a SET keeps the last good version of that pod", () => {
    const { store } = recorder("SnapshotAndUpdates");
    store.apply("file", { pods: [testPod("foo")], rejected: [] });
    store.apply("file", { pods: [invalidFoo()], rejected: [] });
    expect(store.mergedState()[0]!.spec.containers[0]!.image).toBe("local/busybox:latest");
    expect(store.rejected()).toHaveLength(1);
    store.apply("file", { pods: [testPod("foo")], rejected: [] });
    expect(store.rejected()).toHaveLength(0);
  });

  test("parse rejections are reported until the source's next SET no longer has them", () => {
    const { store } = recorder("Snapshot");
    const parseError = {
      source: "file" as const,
      origin: "bad.yaml",
      document: 0,
      issues: [{ path: "<document>", type: "Invalid value", severity: "error" as const }],
    };
    store.apply("file", { pods: [], rejected: [parseError] });
    expect(store.rejected()).toEqual([parseError]);
    store.apply("file", { pods: [], rejected: [] });
    expect(store.rejected()).toEqual([]);
  });

  test("updates emitted by a listener that merges re-entrantly are delivered in order", () => {
    const store = createPodStore({ mode: "Incremental", sources: ["file"] });
    const seen: string[] = [];
    store.subscribe((u) => {
      seen.push(`${u.op} ${u.pods[0]!.metadata.name}`);
      if (u.pods[0]!.metadata.name === "a") store.merge("http", "ADD", [testPod("b", {}, { source: "http" })]);
    });
    store.subscribe((u) => seen.push(`second ${u.op} ${u.pods[0]!.metadata.name}`));
    store.merge("file", "ADD", [testPod("a")]);
    expect(seen).toEqual(["ADD a", "second ADD a", "ADD b", "second ADD b"]);
  });

  test("sync re-sends the merged state as a SET, even when it is empty", () => {
    const { store, updates } = recorder("SnapshotAndUpdates");
    store.sync();
    expect(updates).toEqual([{ op: "SET", pods: [], source: "*" }]);
  });

  test("is ready only after every configured source has merged once", async () => {
    const store = createPodStore({ sources: ["file", "etcd"] });
    let ready = false;
    void store.whenAllSourcesReady().then(() => (ready = true));
    store.apply("file", { pods: [], rejected: [] });
    store.merge("http", "ADD", [testPod("pushed", {}, { source: "http" })]);
    await Promise.resolve();
    expect(store.allSourcesReady()).toBe(false);
    expect(ready).toBe(false);
    store.apply("etcd", { pods: [], rejected: [] });
    await Promise.resolve();
    expect(store.allSourcesReady()).toBe(true);
    expect(ready).toBe(true);
  });

  test("a source that says it is not ready keeps its pods, stops nothing and is listed as not ready until it reads again", () => {
    const { store, seen } = recorder("SnapshotAndUpdates", ["file", "etcd"]);
    store.apply("file", { pods: [foo()], rejected: [] });
    expect(store.sourcesNotReady()).toEqual([{ source: "etcd", reason: "not read yet" }]);
    store.apply("etcd", { pods: [], rejected: [] });
    store.apply("file", { pods: [], rejected: [], notReady: 'manifest path "/x" does not exist' });
    expect(store.mergedState().map((p) => p.metadata.name)).toEqual(["foo"]);
    expect(seen()).toEqual(["SET foo"]);
    expect(store.allSourcesReady()).toBe(false);
    expect(store.sourcesNotReady()).toEqual([{ source: "file", reason: 'manifest path "/x" does not exist' }]);
    store.apply("file", { pods: [], rejected: [] });
    expect(store.allSourcesReady()).toBe(true);
    expect(seen()).toEqual(["SET foo", "SET "]);
  });

  test("warnings are logged once per version of a pod, and the pod still runs", () => {
    const lines: string[] = [];
    const log = { debug() {}, info() {}, error() {}, warn: (m: string) => lines.push(m), child: () => log };
    const store = createPodStore({ sources: ["file"], log });
    const pod: Pod = testPod("w", { schedulerName: "ssd" });
    store.apply("file", { pods: [pod], rejected: [] });
    store.apply("file", { pods: [pod], rejected: [] });
    expect(lines.filter((l) => l.includes("spec.schedulerName"))).toHaveLength(1);
    expect(store.mergedState()).toHaveLength(1);
  });

  test("the validation cache does not keep every version: after 200 edits the first is validated (and warned about) again, the live ones are not", () => {
    const lines: string[] = [];
    const log = { debug() {}, info() {}, error() {}, warn: (m: string) => lines.push(m), child: () => log };
    const store = createPodStore({ sources: ["file", "http"], log });
    const version = (n: number): Pod => testPod("w", { schedulerName: `d${n}` });
    const other: Pod = testPod("o", { schedulerName: "hdd" });
    const warned = () => lines.filter((l) => l.includes("spec.schedulerName")).length;
    store.apply("http", { pods: [other], rejected: [] });
    for (let n = 0; n < 200; n++) store.apply("file", { pods: [version(n)], rejected: [] });
    expect(warned()).toBe(201);
    store.apply("file", { pods: [version(199)], rejected: [] });
    store.apply("http", { pods: [other], rejected: [] });
    expect(warned()).toBe(201);
    store.apply("file", { pods: [version(0)], rejected: [] });
    expect(warned()).toBe(202);
  });

  test("privileged pods are dropped unless allowed", () => {
    const privileged = testPod("p", {
      containers: [{ name: "c", image: "busybox:1.35", securityContext: { privileged: true } }],
    });
    expect(createPodStoreWith(false, privileged)).toHaveLength(0);
    expect(createPodStoreWith(true, privileged)).toHaveLength(1);
  });
});

function createPodStoreWith(allowPrivileged: boolean, pod: Pod): Pod[] {
  const store = createPodStore({ sources: ["file"], allowPrivileged });
  store.apply("file", { pods: [pod], rejected: [] });
  return store.mergedState();
}

describe("merge store reports", () => {
  function reporting(options: { sources?: Array<"file" | "url" | "etcd">; mode?: NotificationMode } = {}) {
    const warnings: Array<[string, unknown]> = [];
    const errors: string[] = [];
    const sourceErrors: string[] = [];
    const log = {
      debug() {},
      info() {},
      error: (m: string) => errors.push(m),
      warn: (m: string, fields?: unknown) => warnings.push([m, fields]),
      child: () => log,
    };
    const metrics = { ...noopMetrics, sourceError: (s: string) => sourceErrors.push(s) };
    const store = createPodStore({ sources: options.sources ?? ["file"], mode: options.mode, log, metrics });
    return { store, warnings, errors, sourceErrors };
  }
  const inFile = (name: string, file: string, document?: number, spec = {}) => {
    const pod = testPod(name, spec, { origin: file });
    if (document === undefined) delete pod.metadata.annotations["kubelet.io/config.document"];
    else pod.metadata.annotations["kubelet.io/config.document"] = String(document);
    return pod;
  };

  test("a duplicate in one source is reported with both origins, document indexes included, and logged once", () => {
    const r = reporting();
    const twice = () =>
      r.store.apply("file", { pods: [inFile("a", "all.yaml", 0), inFile("a", "all.yaml", 2)], rejected: [] });
    twice();
    expect(r.store.rejected()).toEqual([
      {
        source: "file",
        origin: "all.yaml",
        document: 2,
        pod: "default/a",
        issues: [
          {
            path: "metadata.name",
            type: "Duplicate value",
            value: "a",
            detail: "pod default/a is already defined in all.yaml[0]; the first one wins",
            severity: "error",
          },
        ],
      },
    ]);
    twice();
    expect(r.warnings).toEqual([
      [
        'dropping pod default/a from file all.yaml: metadata.name: Duplicate value: "a": pod default/a is already defined in all.yaml[0]; the first one wins',
        { source: "file", origin: "all.yaml" },
      ],
    ]);
    expect(r.sourceErrors).toEqual(["file"]);
  });

  test("a name another source holds is reported naming that source; a pod without an origin is named by its source", () => {
    const r = reporting({ sources: ["file", "url"] });
    const fromUrl = testPod("a", {}, { source: "url" });
    delete fromUrl.metadata.annotations["kubelet.io/config.origin"];
    r.store.apply("url", { pods: [fromUrl], rejected: [] });
    r.store.apply("file", { pods: [inFile("a", "a.yaml")], rejected: [] });
    expect(r.store.rejected()).toEqual([
      {
        source: "file",
        origin: "a.yaml",
        pod: "default/a",
        issues: [
          {
            path: "metadata.name",
            type: "Duplicate value",
            value: "a",
            detail: "pod default/a already comes from the url source, which keeps it",
            severity: "error",
          },
        ],
      },
    ]);
    const dupInUrl = reporting({ sources: ["url"] });
    dupInUrl.store.apply("url", { pods: [fromUrl, fromUrl], rejected: [] });
    expect(dupInUrl.store.rejected()[0]!.issues[0]!.detail).toBe(
      "pod default/a is already defined in url; the first one wins",
    );
    expect(dupInUrl.store.rejected()[0]!.origin).toBe("url");
  });

  test("an invalid pod is reported with its errors only, and its problem is logged again once it changes", () => {
    const r = reporting();
    const bad = (name: string) =>
      inFile("a", "a.yaml", undefined, { containers: [{ name, image: "" }], schedulerName: "ssd" });
    r.store.apply("file", { pods: [bad("c")], rejected: [] });
    const [rejected] = r.store.rejected();
    expect(rejected!.issues.every((i) => i.severity === "error")).toBe(true);
    expect(rejected!.issues.map((i) => i.path)).toEqual(["spec.containers[0].image"]);
    const dropped = r.warnings.filter(([m]) => m.startsWith("dropping"));
    expect(dropped).toEqual([
      [
        "dropping pod default/a from file a.yaml: spec.containers[0].image: Required value",
        { source: "file", origin: "a.yaml" },
      ],
    ]);
    expect(r.warnings.filter(([m]) => m.startsWith("pod default/a from a.yaml: spec.schedulerName"))).toHaveLength(1);
    r.store.apply("file", { pods: [bad("c")], rejected: [] });
    r.store.apply("file", { pods: [bad("Not A Name")], rejected: [] });
    expect(r.warnings.filter(([m]) => m.startsWith("dropping"))).toHaveLength(2);
    expect(r.sourceErrors).toEqual(["file", "file"]);
  });

  test("a parse rejection without a pod is logged by its document", () => {
    const r = reporting();
    const broken = (document?: number) => ({
      source: "file" as const,
      origin: "bad.yaml",
      ...(document !== undefined ? { document } : {}),
      issues: [{ path: "<document>", type: "Invalid value", detail: "bad indentation", severity: "error" as const }],
    });
    r.store.apply("file", { pods: [], rejected: [broken(3)] });
    r.store.apply("file", { pods: [], rejected: [broken()] });
    expect(r.warnings.map(([m]) => m)).toEqual([
      "dropping document 3 from file bad.yaml: <document>: Invalid value: bad indentation",
      "dropping document 0 from file bad.yaml: <document>: Invalid value: bad indentation",
    ]);
  });

  test("ADD and UPDATE keep the problems of pods they do not mention; REMOVE clears the problems of the pods it removes", () => {
    const r = reporting({ mode: "Incremental" });
    r.store.merge("file", "ADD", [inFile("a", "a.yaml"), inFile("a", "a.yaml")]);
    expect(r.store.rejected().map((x) => x.pod)).toEqual(["default/a"]);
    r.store.merge("file", "ADD", [inFile("b", "b.yaml")]);
    r.store.merge("file", "UPDATE", [inFile("b", "b.yaml", undefined, { restartPolicy: "Never" })]);
    expect(r.store.rejected().map((x) => x.pod)).toEqual(["default/a"]);
    r.store.merge("file", "ADD", [inFile("a", "a.yaml")]);
    expect(r.store.rejected()).toEqual([]);
    r.store.merge("file", "ADD", [inFile("c", "c.yaml", undefined, { containers: [{ name: "c", image: "" }] })]);
    r.store.merge("file", "REMOVE", [inFile("b", "b.yaml")]);
    expect(r.store.rejected().map((x) => x.pod)).toEqual(["default/c"]);
    r.store.merge("file", "REMOVE", [inFile("c", "c.yaml")]);
    expect(r.store.rejected()).toEqual([]);
    expect(r.store.mergedState().map((p) => p.metadata.name)).toEqual(["a"]);
  });

  test("rejections are listed in source order", () => {
    const r = reporting({ sources: ["file", "url"] });
    const invalid = (source: "file" | "url") =>
      testPod("x", { containers: [{ name: "c", image: "" }] }, { source, origin: source });
    r.store.apply("url", { pods: [invalid("url")], rejected: [] });
    r.store.apply("file", { pods: [invalid("file")], rejected: [] });
    expect(r.store.rejected().map((x) => x.source)).toEqual(["file", "url"]);
  });

  test("a failing listener is logged and the others still get the update; unsubscribe stops delivery", () => {
    const r = reporting();
    const seen: string[] = [];
    r.store.subscribe(() => {
      throw new Error("boom");
    });
    const unsubscribe = r.store.subscribe((u) => seen.push(u.op));
    r.store.apply("file", { pods: [testPod("a")], rejected: [] });
    expect(r.errors).toEqual(["pod update listener failed: boom"]);
    expect(seen).toEqual(["SET"]);
    unsubscribe();
    r.store.apply("file", { pods: [], rejected: [] });
    expect(seen).toEqual(["SET"]);
  });

  test("the default mode is SnapshotAndUpdates; with no configured sources the store is ready at once", async () => {
    const store = createPodStore({ sources: [] });
    await store.whenAllSourcesReady();
    const updates: PodUpdate[] = [];
    store.subscribe((u) => updates.push(u));
    store.merge("http", "ADD", [testPod("a", {}, { source: "http" })]);
    store.merge("http", "UPDATE", [testPod("a", { restartPolicy: "Never" }, { source: "http" })]);
    expect(updates.map((u) => [u.op, u.source])).toEqual([
      ["SET", "*"],
      ["UPDATE", "http"],
    ]);
    expect(store.mergedState().map((p) => p.metadata.name)).toEqual(["a"]);
    expect(store.allSourcesReady()).toBe(true);
  });

  test("privileged pods are dropped by default; without a logger a failing listener is still survived", () => {
    const store = createPodStore({ sources: ["file"] });
    store.subscribe(() => {
      throw new Error("boom");
    });
    const privileged = testPod("p", {
      containers: [{ name: "c", image: "b:1", securityContext: { privileged: true } }],
    });
    store.apply("file", { pods: [privileged, testPod("ok")], rejected: [] });
    expect(store.mergedState().map((p) => p.metadata.name)).toEqual(["ok"]);
  });

  test("a configured source that has not reported has no rejections; a Snapshot update comes from *", () => {
    const { store, updates } = recorder("Snapshot", ["file", "url"] as never);
    store.apply("file", { pods: [testPod("a")], rejected: [] });
    expect(store.rejected()).toStrictEqual([]);
    expect(updates.map((u) => u.source)).toEqual(["*"]);
  });

  test("a logged drop lists only the errors, joined; warnings of a pod are logged apart, joined", () => {
    const r = reporting();
    r.store.apply("file", {
      pods: [],
      rejected: [
        {
          source: "file",
          origin: "x.yaml",
          pod: "default/x",
          issues: [
            { path: "a", type: "Required value", severity: "error" },
            { path: "b", type: "Ignored field", severity: "warning" },
            { path: "c", type: "Invalid value", severity: "error" },
          ],
        },
      ],
    });
    expect(r.warnings.map(([m]) => m)).toEqual([
      "dropping pod default/x from file x.yaml: a: Required value; c: Invalid value",
    ]);
    const noisy = inFile("n", "n.yaml", undefined, {
      schedulerName: "ssd",
      containers: [{ name: "c", image: "" }],
      bogus: true,
    } as never);
    r.store.apply("file", { pods: [noisy], rejected: [] });
    const podWarnings = r.warnings.map(([m]) => m).filter((m) => m.startsWith("pod default/n"));
    expect(podWarnings).toHaveLength(1);
    expect(podWarnings[0]).toContain("spec.schedulerName");
    expect(podWarnings[0]).toContain("; ");
    expect(podWarnings[0]).not.toContain("Required value");
  });

  test("REMOVE of several pods clears each one's problems; REMOVE of a pod never stored changes nothing", () => {
    const r = reporting({ mode: "Incremental" });
    const updates: PodUpdate[] = [];
    r.store.subscribe((u) => updates.push(u));
    r.store.merge("file", "ADD", [inFile("a", "a.yaml"), inFile("a", "a.yaml"), inFile("b", "b.yaml")]);
    r.store.merge("url", "ADD", [testPod("u", {}, { source: "url" })]);
    r.store.merge("file", "REMOVE", [inFile("a", "a.yaml"), inFile("b", "b.yaml")]);
    expect(r.store.rejected()).toEqual([]);
    const before = updates.length;
    r.store.merge("file", "REMOVE", [testPod("u")]);
    expect(updates.length).toBe(before);
    r.store.merge("file", "ADD", [testPod("u")]);
    expect(r.store.rejected().map((x) => x.issues[0]!.detail)).toEqual([
      "pod default/u already comes from the url source, which keeps it",
    ]);
  });

  test("a SET with one invalid edit keeps that pod's last good version and still removes the pods it no longer lists", () => {
    const { store } = recorder("Snapshot");
    store.apply("file", { pods: [testPod("keep"), testPod("gone"), testPod("bad")], rejected: [] });
    store.apply("file", {
      pods: [testPod("keep"), testPod("bad", { containers: [{ name: "c", image: "" }] })],
      rejected: [],
    });
    expect(
      store
        .mergedState()
        .map((p) => [p.metadata.name, p.spec.containers[0]!.image])
        .sort(),
    ).toEqual([
      ["bad", "local/busybox:latest"],
      ["keep", "local/busybox:latest"],
    ]);
  });

  test("a pod handed over again unchanged is kept as the stored object and emits nothing", () => {
    const { store, updates } = recorder("Incremental");
    const a = testPod("a");
    store.apply("file", { pods: [a], rejected: [] });
    const again = testPod("a");
    delete again.metadata.annotations["kubernetes.io/config.hash"];
    store.apply("file", { pods: [again], rejected: [] });
    expect(store.mergedState()[0]).toBe(a);
    expect(updates).toHaveLength(1);
  });
});

describe("the validation cache", () => {
  function warnedAbout(sources: SourceName[]) {
    const lines: string[] = [];
    const log = { debug() {}, info() {}, error() {}, warn: (m: string) => lines.push(m), child: () => log };
    const store = createPodStore({ sources, log });
    return { store, warned: (name: string) => lines.filter((l) => l.startsWith(`pod default/${name} `)).length };
  }
  const churn = (n: number): Pod => testPod("churn", { schedulerName: `d${n}` });

  test("forgets a version no longer sent or stored only once it holds more than twice the live versions plus 64", () => {
    const { store, warned } = warnedAbout(["file"]);
    const gone = testPod("gone", { schedulerName: "gone" });
    store.apply("file", { pods: [gone], rejected: [] });
    store.apply("file", { pods: [], rejected: [] });
    // 1 + 67 versions cached, 2 live (the one sent, the one stored): 68 <= 2 * 2 + 64, nothing is forgotten.
    for (let n = 0; n < 67; n++) store.apply("file", { pods: [churn(n)], rejected: [] });
    store.apply("file", { pods: [gone], rejected: [] });
    expect(warned("gone")).toBe(1);
    // One version more, 69 > 68: the sweep keeps only the live one.
    store.apply("file", { pods: [churn(67)], rejected: [] });
    store.apply("file", { pods: [gone], rejected: [] });
    expect(warned("gone")).toBe(2);
  });

  test("keeps the versions a source stores even when its last merge sent others", () => {
    const { store, warned } = warnedAbout(["file"]);
    const kept = testPod("kept", { schedulerName: "kept" });
    store.merge("file", "ADD", [kept]);
    for (let n = 0; n < 200; n++) store.merge("file", "ADD", [churn(n)]);
    store.merge("file", "ADD", [kept]);
    expect(warned("kept")).toBe(1);
    expect(warned("churn")).toBe(200);
  });

  test("forgets the versions a REMOVE named, since they are neither sent nor stored any more", () => {
    const { store, warned } = warnedAbout(["file", "http"]);
    const removed = testPod("removed", { schedulerName: "removed" });
    store.merge("file", "ADD", [removed]);
    store.merge("file", "REMOVE", [removed]);
    for (let n = 0; n < 200; n++) store.apply("http", { pods: [churn(n)], rejected: [] });
    store.merge("file", "ADD", [removed]);
    expect(warned("removed")).toBe(2);
  });

  test("keeps the version of an invalid pod its source still sends, though it is never stored", () => {
    const { store, warned } = warnedAbout(["file"]);
    const invalid = testPod("invalid", { schedulerName: "x", containers: [{ name: "c", image: "" }] });
    for (let n = 0; n < 200; n++) store.apply("file", { pods: [invalid, churn(n)], rejected: [] });
    expect(warned("invalid")).toBe(1);
    expect(store.mergedState().map((p) => p.metadata.name)).toEqual(["churn"]);
  });
});

describe("merge store options and sources", () => {
  const etcMount = () => testPod("etc", { volumes: [{ name: "etc", hostPath: { path: "/etc" } }] });

  test("a pod mounting a sensitive host path is dropped unless --allow_sensitive_host_paths allows it", () => {
    for (const [allowSensitiveHostPaths, running] of [
      [undefined, 0],
      [false, 0],
      [true, 1],
    ] as const) {
      const store = createPodStore({ sources: ["file"], allowSensitiveHostPaths });
      store.apply("file", { pods: [etcMount()], rejected: [] });
      expect(store.mergedState()).toHaveLength(running);
    }
  });

  test("a source that is not configured and not ready is listed as not ready", () => {
    const store = createPodStore({ sources: ["file"] });
    store.apply("file", { pods: [], rejected: [] });
    store.apply("http", { pods: [], rejected: [], notReady: "cannot fetch" });
    expect(store.sourcesNotReady()).toEqual([{ source: "http", reason: "cannot fetch" }]);
  });

  test("ConfigMaps merged from a source not configured are served; merging configs never lists a source twice", () => {
    const store = createPodStore({ sources: ["file"] });
    store.apply("file", { pods: [testPod("a")], rejected: [] });
    store.mergeConfigs("file", "ADD", [testConfig("ConfigMap", "file-cm", { data: { k: "v" } })]);
    store.mergeConfigs("http", "ADD", [testConfig("ConfigMap", "http-cm", { data: { k: "v" } })]);
    expect(store.configs.get("ConfigMap", "default", "http-cm")?.metadata.name).toBe("http-cm");
    expect(store.configs.get("ConfigMap", "default", "file-cm")?.metadata.name).toBe("file-cm");
    expect(store.mergedState().map((p) => p.metadata.name)).toEqual(["a"]);
  });

  test("a pod with warnings is merged without a logger", () => {
    const store = createPodStore({ sources: ["file"] });
    store.apply("file", { pods: [testPod("w", { schedulerName: "ssd" })], rejected: [] });
    expect(store.mergedState()).toHaveLength(1);
  });

  test("a REMOVE as a source's first merge reports nothing", () => {
    const store = createPodStore({ sources: ["file"] });
    store.merge("file", "REMOVE", [testPod("a")]);
    expect(store.rejected()).toEqual([]);
  });

  test("an ADD of several pods clears the problem of the one it fixes", () => {
    const store = createPodStore({ sources: ["file"] });
    store.merge("file", "ADD", [invalidFoo()]);
    expect(store.rejected().map((r) => r.pod)).toEqual(["default/foo"]);
    store.merge("file", "ADD", [testPod("other"), foo()]);
    expect(store.rejected()).toEqual([]);
  });

  test("a duplicate of a pod that names neither its origin nor its source is said to come from an unknown source", () => {
    const bare = () => {
      const pod = testPod("a");
      pod.metadata.annotations = {};
      return pod;
    };
    const store = createPodStore({ sources: ["file"] });
    store.apply("file", { pods: [bare(), bare()], rejected: [] });
    expect(store.rejected()[0]!.issues[0]!.detail).toBe(
      "pod default/a is already defined in unknown source; the first one wins",
    );
  });

  test("a SET that keeps the last good version of a broken pod lists that pod first, then the SET's pods in their order", () => {
    const store = createPodStore({ sources: ["file"] });
    store.apply("file", { pods: [testPod("a"), testPod("b")], rejected: [] });
    const brokenA = testPod("a", { containers: [{ name: "c", image: "" }] });
    store.apply("file", { pods: [testPod("c"), testPod("b"), brokenA], rejected: [] });
    expect(store.mergedState().map((p) => p.metadata.name)).toEqual(["a", "c", "b"]);
  });

  test("a snapshot replaces its source's ConfigMaps: one it no longer has is gone", () => {
    const store = createPodStore({ sources: ["file"] });
    const cm = testConfig("ConfigMap", "cm", { data: { k: "v" } });
    store.apply("file", { pods: [], configs: [cm], rejected: [] });
    expect(store.configs.get("ConfigMap", "default", "cm")).toBeDefined();
    store.apply("file", { pods: [], configs: [], rejected: [] });
    expect(store.configs.get("ConfigMap", "default", "cm")).toBeUndefined();
  });
});
