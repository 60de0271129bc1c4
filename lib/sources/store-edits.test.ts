// The merge store under edits that break a running pod's manifest: whatever the edit broke, the last good
// version keeps running, and the rejection, the log and the event say so.
import { describe, expect, test } from "bun:test";
import { createPodStore, type PodStore } from "./store.ts";
import { readManifests } from "../api/manifest.ts";
import { readKeepingLastGood, type LastGood } from "./last-good.ts";
import type { RejectedPod } from "../api/types.ts";

const GOOD = `apiVersion: v1
kind: Pod
metadata:
  name: edge-web
spec:
  containers:
  - name: web
    image: busybox:1.36
    command: ["httpd", "-f"]
`;

function recording(strictManifests?: boolean) {
  const warnings: string[] = [];
  const events: Array<{ pod: string; uid: string; message: string }> = [];
  const log = { debug() {}, info() {}, error() {}, warn: (m: string) => warnings.push(m), child: () => log };
  const store = createPodStore({
    sources: ["file"],
    log,
    strictManifests,
    onRejected: (pod, message) =>
      events.push({ pod: `${pod.metadata.namespace}/${pod.metadata.name}`, uid: pod.metadata.uid, message }),
  });
  let last: LastGood | undefined;
  /** Reads `text` as the file source does (keeping the last good text of a file that does not parse) and merges it. */
  const write = (text: string, origin = "/etc/kubelet/edge-web.yaml") => {
    const read = readKeepingLastGood(text, last, (t) => readManifests(t, { source: "file", origin }));
    last = read.last;
    store.apply("file", read.snapshot);
  };
  const running = () => store.mergedState().map((p) => `${p.metadata.name}:${p.spec.containers[0]?.command?.[0]}`);
  const said = (r: RejectedPod) => r.issues.map((i) => i.detail ?? "").join("; ");
  return { store, warnings, events, write, running, said };
}

const TYPOS: Array<{ name: string; text: string; issue: string }> = [
  { name: "apiVersion", text: GOOD.replace("apiVersion: v1", "apiVersion: v2"), issue: "apiVersion" },
  { name: "kind", text: GOOD.replace("kind: Pod", "kind: Pdo"), issue: "kind" },
  { name: "kind removed", text: GOOD.replace("kind: Pod\n", ""), issue: "kind" },
  { name: "metadata.name", text: GOOD.replace("name: edge-web", "name: Edge_Web"), issue: "metadata.name" },
  { name: "metadata.name removed", text: GOOD.replace("  name: edge-web\n", "  labels: {}\n"), issue: "metadata.name" },
  { name: "unknown field", text: GOOD.replace("command:", "comand:"), issue: "spec.containers[0].comand" },
  { name: "bad YAML", text: GOOD.replace('["httpd", "-f"]', '["httpd", "-f"'), issue: "<document>" },
  {
    name: "bad quantity",
    text: `${GOOD}    resources: {limits: {memory: 64Mb}}\n`,
    issue: "spec.containers[0].resources.limits[memory]",
  },
  {
    name: "a rename with a bad quantity",
    text: `${GOOD.replace("name: edge-web", "name: edge-web2")}    resources: {limits: {memory: 64Mb}}\n`,
    issue: "spec.containers[0].resources.limits[memory]",
  },
];

describe("an edit that breaks a running pod's manifest keeps its last good version", () => {
  for (const typo of TYPOS)
    test(`${typo.name}: the pod runs on as it was, the rejection and its event say so, and the fixed file applies`, () => {
      const r = recording(true);
      r.write(GOOD);
      const uid = r.store.mergedState()[0]!.metadata.uid;
      r.write(typo.text);
      expect(r.running()).toEqual(["edge-web:httpd"]);
      const [rejection, ...more] = r.store.rejected();
      expect(more).toEqual([]);
      expect(rejection!.issues.map((i) => i.path)).toContain(typo.issue);
      expect(r.said(rejection!)).toContain("keeping the last good version");
      expect(r.warnings.at(-1)).toStartWith("refusing the edit of ");
      expect(r.warnings.at(-1)).toContain("keeping the last good version");
      expect(r.events.at(-1)).toMatchObject({ pod: "default/edge-web", uid });
      expect(r.events.at(-1)!.message).toContain("keeping the last good version");
      expect([...r.store.refusedEdits().keys()]).toEqual(["default/edge-web"]);
      expect(r.store.refusedEdits().get("default/edge-web")).toContain(typo.issue);
      const refusedAt = r.store.refusedEditsVersion();
      r.write(GOOD.replace('"httpd"', '"sh"'));
      expect(r.running()).toEqual(["edge-web:sh"]);
      expect(r.store.rejected()).toEqual([]);
      expect(r.store.refusedEdits().size).toBe(0);
      expect(r.store.refusedEditsVersion()).toBeGreaterThan(refusedAt);
    });

  test("a valid rename is a new pod: the old name stops, the new one starts", () => {
    const r = recording(true);
    r.write(GOOD);
    r.write(GOOD.replace("name: edge-web", "name: edge-api"));
    expect(r.running()).toEqual(["edge-api:httpd"]);
    expect(r.store.rejected()).toEqual([]);
  });

  test("another document of the same file breaking keeps only its own pod; the valid one is edited", () => {
    const r = recording(true);
    const two = (first: string, second: string) => `${first}---\n${second}`;
    const other = GOOD.replace("name: edge-web", "name: edge-api");
    r.write(two(GOOD, other));
    r.write(two(GOOD.replace('"httpd"', '"sh"'), other.replace("kind: Pod", "kind: Pdo")));
    expect(r.running().sort()).toEqual(["edge-api:httpd", "edge-web:sh"]);
    expect(r.store.rejected()).toMatchObject([{ document: 1 }]);
  });

  test("a manifest that cannot be read at all keeps every pod it gave", () => {
    const r = recording(true);
    r.write(GOOD);
    r.store.apply("file", {
      pods: [],
      rejected: [
        {
          source: "file",
          origin: "/etc/kubelet/edge-web.yaml",
          issues: [
            { path: "<file>", type: "Invalid value", detail: "cannot read manifest: EACCES", severity: "error" },
          ],
        },
      ],
    });
    expect(r.running()).toEqual(["edge-web:httpd"]);
    expect(r.said(r.store.rejected()[0]!)).toEndWith("keeping the last good version of pod default/edge-web running");
  });

  test("removing a file still stops its pods", () => {
    const r = recording(true);
    r.write(GOOD);
    r.store.apply("file", { pods: [], rejected: [] });
    expect(r.running()).toEqual([]);
  });
});

describe("unknown fields under --strict_manifests", () => {
  const typo = GOOD.replace("command:", "comand:");

  test("strict: a new pod with an unknown field is rejected with the did-you-mean, and nothing runs", () => {
    const r = recording(true);
    r.write(typo);
    expect(r.running()).toEqual([]);
    const [rejection] = r.store.rejected();
    expect(rejection!.issues[0]).toMatchObject({ path: "spec.containers[0].comand", severity: "error" });
    expect(r.said(rejection!)).toContain("did you mean command?");
    expect(r.said(rejection!)).toContain("--strict_manifests=false");
    expect(r.said(rejection!)).not.toContain("keeping the last good version");
    expect(r.warnings.at(-1)).toStartWith("dropping pod default/edge-web");
    expect(r.events.at(-1)).toMatchObject({ pod: "default/edge-web", uid: "" });
    expect(r.events.at(-1)!.message).toContain("did you mean command?");
  });

  test("lenient (--strict_manifests=false, the store's default): the field is warned about and the edit applies", () => {
    for (const strict of [false, undefined]) {
      const r = recording(strict);
      r.write(GOOD);
      r.write(typo);
      expect(r.running()).toEqual(["edge-web:undefined"]);
      expect(r.store.rejected()).toEqual([]);
      expect(r.warnings.join("\n")).toContain("is ignored (did you mean command?)");
    }
  });
});

describe("what a refused edit says and keeps", () => {
  const ORIGIN = "/etc/kubelet/edge-web.yaml";
  const other = GOOD.replace("name: edge-web", "name: edge-api");
  const badQuantity = (text: string) => `${text}    resources: {limits: {memory: 64Mb}}\n`;
  /** The file source's snapshot when the file cannot be read at all: no pods, one rejection of the whole file. */
  const unreadable = (store: PodStore) => {
    const issue = { path: "<file>", type: "Invalid value", detail: "cannot read: EACCES", severity: "error" } as const;
    store.apply("file", { pods: [], rejected: [{ source: "file", origin: ORIGIN, issues: [issue] }] });
  };

  test("refusedEdits() and the event name where the edit came from, origin[document], then its errors", () => {
    const r = recording(true);
    r.write(`${GOOD}---\n${other}`);
    r.write(`${GOOD}---\n${badQuantity(other)}`);
    const said = r.store.refusedEdits().get("default/edge-api");
    expect(said).toStartWith(`${ORIGIN}[1]: spec.containers[0].resources.limits[memory]: `);
    expect(r.events.at(-1)!.message).toBe(said!);
  });

  test("a refusal of a whole file (no document) is named by the file alone", () => {
    const r = recording(true);
    r.write(GOOD);
    unreadable(r.store);
    expect(r.store.refusedEdits().get("default/edge-web")).toStartWith(
      `${ORIGIN}: <file>: Invalid value: cannot read: EACCES`,
    );
  });

  test("refusedEditsVersion() stays put while nothing is or was refused", () => {
    const r = recording(true);
    r.write(GOOD);
    r.write(GOOD.replace('"httpd"', '"sh"'));
    expect(r.store.refusedEditsVersion()).toBe(0);
  });

  test("a document that names no pod is logged but raises no event", () => {
    const r = recording(true);
    r.write(GOOD.replace('["httpd", "-f"]', '["httpd", "-f"'));
    expect(r.store.rejected()).toHaveLength(1);
    expect(r.warnings.at(-1)).toStartWith("dropping document 0");
    expect(r.events).toEqual([]);
  });

  test("a pod whose manifest moved to another file and broke there keeps its last good version, found by name", () => {
    const r = recording(true);
    r.write(GOOD);
    r.write(badQuantity(GOOD), "/etc/kubelet/moved.yaml");
    expect(r.running()).toEqual(["edge-web:httpd"]);
    expect(r.said(r.store.rejected()[0]!)).toEndWith("keeping the last good version of pod default/edge-web running");
    expect([...r.store.refusedEdits().keys()]).toEqual(["default/edge-web"]);
  });

  test("a broken ConfigMap that shares a pod's name keeps no pod: the pod its file no longer lists stops", () => {
    const r = recording(true);
    r.write(GOOD);
    const brokenConfig: RejectedPod = {
      source: "file",
      origin: "/etc/kubelet/config.yaml",
      document: 0,
      kind: "ConfigMap",
      pod: "default/edge-web",
      issues: [{ path: "data", type: "Invalid value", detail: "not a map", severity: "error" }],
    };
    r.store.apply("file", { pods: [], rejected: [brokenConfig] });
    expect(r.running()).toEqual([]);
    expect(r.store.refusedEdits().size).toBe(0);
  });

  test("a file that stops parsing keeps its pods once, and says so once", () => {
    const r = recording(true);
    r.write(GOOD);
    r.write(GOOD.replace('["httpd", "-f"]', '["httpd", "-f"'));
    expect(r.running()).toEqual(["edge-web:httpd"]);
    const [rejection] = r.store.rejected();
    expect(r.said(rejection!).split("keeping the last good version")).toHaveLength(2);
    expect([...r.store.refusedEdits().keys()]).toEqual(["default/edge-web"]);
  });

  test("a broken document keeps only its own pod: a document deleted by the same edit stops", () => {
    const r = recording(true);
    const third = GOOD.replace("name: edge-web", "name: edge-db");
    r.write([GOOD, other, third].join("---\n"));
    r.write([GOOD, badQuantity(other)].join("---\n"));
    expect(r.running().sort()).toEqual(["edge-api:httpd", "edge-web:httpd"]);
  });

  test("a file that cannot be read keeps every pod it gave, and the rejection names them all", () => {
    const r = recording(true);
    r.write(`${GOOD}---\n${other}`);
    unreadable(r.store);
    expect(r.running()).toEqual(["edge-web:httpd", "edge-api:httpd"]);
    expect(r.said(r.store.rejected()[0]!)).toEndWith(
      "keeping the last good version of pod default/edge-web, default/edge-api running",
    );
  });

  test("the re-sent pods of a rejection are refused edits only when the source says it keeps them", () => {
    const sent = (issues: RejectedPod["issues"]) => {
      const r = recording(true);
      r.write(GOOD);
      const [pod] = r.store.mergedState();
      r.store.apply("file", { pods: [pod!], rejected: [{ source: "file", origin: ORIGIN, document: 0, issues }] });
      return [...r.store.refusedEdits().keys()];
    };
    const failed = { path: "<document>", type: "Invalid value", severity: "error" } as const;
    expect(sent([failed, { ...failed, detail: "unexpected end; keeping the last good version of its pods" }])).toEqual([
      "default/edge-web",
    ]);
    expect(sent([{ ...failed, detail: "unexpected end" }])).toEqual([]);
  });

  test("a pod the source sends changed alongside its keeping rejection is an edit that applied, not a refused one", () => {
    const r = recording(true);
    r.write(GOOD);
    const [edited] = readManifests(GOOD.replace('"httpd"', '"sh"'), { source: "file", origin: ORIGIN }).pods;
    const issue = { path: "<document>", type: "Invalid value", detail: "keeping the last good version of its pods" };
    r.store.apply("file", {
      pods: [edited!],
      rejected: [{ source: "file", origin: ORIGIN, document: 0, issues: [{ ...issue, severity: "error" }] }],
    });
    expect(r.running()).toEqual(["edge-web:sh"]);
    expect(r.store.refusedEdits().size).toBe(0);
  });

  test("the kept version is named on the rejection's last error, not on a warning after it", () => {
    const r = recording(true);
    r.write(GOOD);
    const issue = { path: "spec", type: "Invalid value", detail: "bad", severity: "error" } as const;
    const issues = [issue, { ...issue, detail: "worse" }, { ...issue, detail: "odd", severity: "warning" } as const];
    r.store.apply("file", {
      pods: [],
      rejected: [{ source: "file", origin: ORIGIN, document: 0, pod: "default/edge-web", issues }],
    });
    expect(r.store.rejected()[0]!.issues.map((i) => i.detail)).toEqual([
      "bad",
      "worse; keeping the last good version of pod default/edge-web running",
      "odd",
    ]);
  });

  test("a new pod that is dropped is not a refused edit", () => {
    const r = recording(true);
    r.write(badQuantity(GOOD));
    expect(r.store.rejected()).toHaveLength(1);
    expect(r.store.refusedEdits().size).toBe(0);
  });
});
