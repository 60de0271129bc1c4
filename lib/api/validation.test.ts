import { describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { validateConfigObject, type ConfigLookup } from "./config-objects.ts";
import { checkConfigRefs } from "./config-refs.ts";
import { defaultPullPolicy, readManifests } from "./manifest.ts";
import { formatIssue } from "./types.ts";
import { validatePod } from "./validation.ts";

interface Case {
  file: string;
  valid: boolean;
  issues: string[];
  allowPrivileged?: boolean;
  /** Validated as `validate --strict` does (unknown fields are errors); the others as `run` does. */
  strict?: boolean;
}

const dir = join(import.meta.dir, "../../testdata/manifests");
const cases = JSON.parse(readFileSync(join(dir, "cases.json"), "utf8")) as Case[];

/**
 * Every issue a file produces, as `kubelet validate` finds them: parse rejections, each pod's validation and its
 * references to the file's ConfigMaps and Secrets, each ConfigMap's or Secret's validation.
 */
function issuesOf(file: string, allowPrivileged: boolean, strict = false) {
  const { pods, rejected, configs } = readManifests(readFileSync(join(dir, file), "utf8"), {
    source: "file",
    origin: file,
  });
  const lookup: ConfigLookup = {
    get: (kind, namespace, name) =>
      configs.find((o) => o.kind === kind && o.metadata.namespace === namespace && o.metadata.name === name),
  };
  return [
    ...rejected.flatMap((r) => r.issues),
    ...pods.flatMap((pod) => [...validatePod(pod, { allowPrivileged, strict }), ...checkConfigRefs(pod, lookup)]),
    ...configs.flatMap((object) => validateConfigObject(object)),
  ];
}

describe("the manifest table in testdata/manifests", () => {
  test("holds at least 60 cases in both formats and both API versions", () => {
    expect(cases.length).toBeGreaterThanOrEqual(60);
    expect(cases.some((c) => c.file.endsWith(".json"))).toBe(true);
    expect(cases.filter((c) => c.file.includes("v1beta1")).length).toBeGreaterThanOrEqual(4);
  });

  for (const c of cases) {
    test(`${c.file} is ${c.valid ? "valid" : "invalid"}${c.issues.length ? ` and reports ${c.issues.join("; ")}` : ""}`, () => {
      const issues = issuesOf(c.file, c.allowPrivileged ?? false, c.strict);
      const errors = issues.filter((i) => i.severity === "error");
      if (c.valid) expect(errors.map(formatIssue)).toEqual([]);
      else expect(errors.length).toBeGreaterThan(0);
      const printed = issues.map(formatIssue);
      for (const expected of c.issues) expect(printed.some((line) => line.startsWith(expected))).toBe(true);
    });
  }
});

// Every case, exactly: the issues (wording, field paths, values, severities: operators read them, and
// Kubernetes wording is the contract) and the pods (defaults, conversions, uids, annotations), so any
// change shows up as a diff of the golden files. After a deliberate change, regenerate and review the
// diff: UPDATE_GOLDEN=1 bun test lib/api/validation.test.ts.
function golden<T>(name: string, actual: Record<string, T>): Record<string, T> {
  const path = join(dir, name);
  if (process.env.UPDATE_GOLDEN === "1") writeFileSync(path, `${JSON.stringify(actual, null, 2)}\n`);
  return JSON.parse(readFileSync(path, "utf8")) as Record<string, T>;
}

describe("each case, exactly as in the golden files", () => {
  const read = (file: string) => readManifests(readFileSync(join(dir, file), "utf8"), { source: "file", origin: file });
  // Rejections carry where they come from (document, pod) as well as their issues; the rest as issuesOf.
  const issues = Object.fromEntries(
    cases.map((c) => {
      const located = read(c.file).rejected.flatMap((r) =>
        r.issues.map((i) => `${i.severity} [document ${r.document}${r.pod ? `, ${r.pod}` : ""}] ${formatIssue(i)}`),
      );
      const rest = issuesOf(c.file, c.allowPrivileged ?? false, c.strict)
        .slice(located.length)
        .map((i) => `${i.severity} ${formatIssue(i)}`);
      return [c.file, [...located, ...rest]];
    }),
  );
  const pods = Object.fromEntries(
    cases.map((c) => {
      const { pods, configs } = read(c.file);
      return [c.file, [...pods, ...configs]];
    }),
  );
  const goldenIssues = golden("issues.golden.json", issues);
  const goldenPods = golden("pods.golden.json", pods);
  test("the golden files cover every case", () => {
    expect(Object.keys(goldenIssues).sort()).toEqual(cases.map((c) => c.file).sort());
    expect(Object.keys(goldenPods).sort()).toEqual(cases.map((c) => c.file).sort());
  });
  for (const c of cases)
    test(`${c.file}: issues and pods`, () => {
      expect(issues[c.file]).toEqual(goldenIssues[c.file]!);
      expect(JSON.parse(JSON.stringify(pods[c.file]))).toStrictEqual(goldenPods[c.file]!);
    });
});

test("the default pull policy is Always for :latest or no tag, IfNotPresent for any other tag or a digest", () => {
  const table: Array<[string, string]> = [
    ["busybox", "Always"],
    ["busybox:latest", "Always"],
    ["busybox:1.35", "IfNotPresent"],
    ["registry:5000/busybox", "Always"],
    ["registry:5000/team/busybox:latest", "Always"],
    ["registry:5000/busybox:1.35", "IfNotPresent"],
    ["busybox@sha256:0123", "IfNotPresent"],
    ["busybox:latest@sha256:0123", "IfNotPresent"],
    ["", "Always"],
  ];
  expect(table.map(([image]) => [image, defaultPullPolicy(image)])).toEqual(table);
});

describe("readManifests", () => {
  test("derives the same uid for the same source and name, so an edit keeps the pod's identity", () => {
    const read = (image: string) =>
      readManifests(
        `{apiVersion: v1, kind: Pod, metadata: {name: a}, spec: {containers: [{name: c, image: "${image}"}]}}`,
        { source: "file", origin: "a.yaml" },
      ).pods[0]!;
    expect(read("busybox:1").metadata.uid).toBe(read("busybox:2").metadata.uid);
    expect(read("busybox:1").metadata.annotations["kubernetes.io/config.hash"]).not.toBe(
      read("busybox:2").metadata.annotations["kubernetes.io/config.hash"],
    );
  });

  test("reads a leading-zero integer (defaultMode: 0400) as octal, as Kubernetes' YAML 1.1 reader does", () => {
    const pod = readManifests(
      "{apiVersion: v1, kind: Pod, metadata: {name: a}, spec: {containers: [{name: c, image: b}], volumes: [{name: v, secret: {secretName: s, defaultMode: 0400}}], terminationGracePeriodSeconds: 10}}",
      { source: "file", origin: "a" },
    ).pods[0]!;
    expect(pod.spec.volumes![0]!.secret!.defaultMode).toBe(0o400);
    expect(pod.spec.terminationGracePeriodSeconds).toBe(10);
  });

  test("applies the Kubernetes defaults", () => {
    const pod = readManifests(
      "{apiVersion: v1, kind: Pod, metadata: {name: a}, spec: {containers: [{name: c, image: busybox, ports: [{containerPort: 80}], livenessProbe: {exec: {command: [true]}}}, {name: d, image: 'busybox:1.35'}]}}",
      { source: "file", origin: "a" },
    ).pods[0]!;
    expect(pod.metadata.namespace).toBe("default");
    expect(pod.spec.restartPolicy).toBe("Always");
    expect(pod.spec.terminationGracePeriodSeconds).toBe(30);
    expect(pod.spec.containers[0]!.imagePullPolicy).toBe("Always");
    expect(pod.spec.containers[1]!.imagePullPolicy).toBe("IfNotPresent");
    expect(pod.spec.containers[0]!.ports![0]!.protocol).toBe("TCP");
    expect(pod.spec.containers[0]!.livenessProbe).toMatchObject({
      periodSeconds: 10,
      timeoutSeconds: 1,
      successThreshold: 1,
      failureThreshold: 3,
    });
  });

  test("converts a v1beta1 ContainerManifest: id, cpu, memory, hostDir and restartPolicy", () => {
    const pod = readManifests(readFileSync(join(dir, "valid/v1beta1-manifest.yaml"), "utf8"), {
      source: "file",
      origin: "x",
    }).pods[0]!;
    expect(pod.metadata.name).toBe("legacy");
    expect(pod.spec.restartPolicy).toBe("Never");
    expect(pod.spec.volumes).toEqual([{ name: "data", hostPath: { path: "/tmp" } }]);
    expect(pod.spec.containers[0]!.resources).toEqual({ limits: { cpu: "100m", memory: "33554432" } });
  });
});
