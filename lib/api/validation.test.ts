import { describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { defaultPullPolicy, readManifests } from "./manifest.ts";
import { formatIssue } from "./types.ts";
import { validatePod } from "./validation.ts";

interface Case {
  file: string;
  valid: boolean;
  issues: string[];
  allowPrivileged?: boolean;
}

const dir = join(import.meta.dir, "../../testdata/manifests");
const cases = JSON.parse(readFileSync(join(dir, "cases.json"), "utf8")) as Case[];

/** Every issue a file produces: parse rejections, then each pod's validation. */
function issuesOf(file: string, allowPrivileged: boolean) {
  const { pods, rejected } = readManifests(readFileSync(join(dir, file), "utf8"), { source: "file", origin: file });
  return [...rejected.flatMap((r) => r.issues), ...pods.flatMap((pod) => validatePod(pod, { allowPrivileged }))];
}

describe("the manifest table in testdata/manifests", () => {
  test("holds at least 60 cases in both formats and both API versions", () => {
    expect(cases.length).toBeGreaterThanOrEqual(60);
    expect(cases.some((c) => c.file.endsWith(".json"))).toBe(true);
    expect(cases.filter((c) => c.file.includes("v1beta1")).length).toBeGreaterThanOrEqual(4);
  });

  for (const c of cases) {
    test(`${c.file} is ${c.valid ? "valid" : "invalid"}${c.issues.length ? ` and reports ${c.issues.join("; ")}` : ""}`, () => {
      const issues = issuesOf(c.file, c.allowPrivileged ?? false);
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
  // Rejections carry where they come from (document, pod) as well as their issues; pods' issues follow.
  const issues = Object.fromEntries(
    cases.map((c) => {
      const { pods, rejected } = read(c.file);
      return [
        c.file,
        [
          ...rejected.flatMap((r) =>
            r.issues.map((i) => `${i.severity} [document ${r.document}${r.pod ? `, ${r.pod}` : ""}] ${formatIssue(i)}`),
          ),
          ...pods.flatMap((pod) =>
            validatePod(pod, { allowPrivileged: c.allowPrivileged ?? false }).map(
              (i) => `${i.severity} ${formatIssue(i)}`,
            ),
          ),
        ],
      ];
    }),
  );
  const pods = Object.fromEntries(cases.map((c) => [c.file, read(c.file).pods]));
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
