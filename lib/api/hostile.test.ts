import { describe, expect, test } from "bun:test";
import { readdirSync } from "node:fs";
import { HOSTILE_DIR, hostileBytes, hostileCases } from "../testing/hostile.ts";
import { readManifests } from "./manifest.ts";
import { formatIssue } from "./types.ts";
import { validatePod } from "./validation.ts";

/** Every error a manifest produces, formatted as the kubelet prints it. */
function errorsOf(bytes: Uint8Array, origin: string): string[] {
  const { pods, rejected } = readManifests(bytes, { source: "file", origin });
  return [
    ...rejected.flatMap((r) => r.issues.map(formatIssue)),
    ...pods.flatMap((pod) =>
      validatePod(pod, { allowPrivileged: false })
        .filter((i) => i.severity === "error")
        .map(formatIssue),
    ),
  ];
}

describe("the hostile corpus in testdata/hostile", () => {
  const cases = hostileCases();

  test("lists every file of the directory", () => {
    const files = readdirSync(HOSTILE_DIR).filter((f) => f !== "cases.json");
    expect(files.sort()).toEqual(
      cases
        .filter((c) => !c.file.startsWith("generated:"))
        .map((c) => c.file)
        .sort(),
    );
  });

  for (const c of cases) {
    test(`${c.file} is refused with "${c.error}"`, () => {
      const errors = errorsOf(hostileBytes(c), c.file);
      expect(errors.some((line) => line.startsWith(c.error))).toBe(true);
      // The kubelet's own words only: no stack, no runtime's internal message.
      for (const line of errors) expect(line).not.toMatch(/call stack|\n\s+at |TypeError|RangeError|ReferenceError/);
    });
  }
});

describe("the 2014 ContainerManifest, as Kubernetes v0.4 validated it", () => {
  const read = (text: string) => {
    const { pods, rejected } = readManifests(text, { source: "file", origin: "v1beta1.yaml" });
    return [
      ...rejected.flatMap((r) => r.issues),
      ...pods.flatMap((p) => validatePod(p, { allowPrivileged: false })),
    ].filter((i) => i.severity === "error");
  };

  for (const [what, text] of [
    ["a manifest without containers", "{version: v1beta1, id: abc}"],
    ["version v1beta2", '{version: v1beta2, id: "123"}'],
    ["the version in capitals and a dotted id", "{version: V1BETA1, id: abc.123.do-re-mi}"],
    [
      "every field of the v0.4 success case, with a source-less volume and a mount by `path`",
      `version: v1beta1
id: abc
volumes:
- {name: vol1, source: {hostDir: {path: /mnt/vol1}}}
- {name: vol2, source: {hostDir: {path: /mnt/vol2}}}
- {name: vol3}
containers:
- name: abc
  image: image
  command: [foo, bar]
  workingDir: /tmp
  memory: 1
  cpu: 1
  ports:
  - {name: p1, containerPort: 80, hostPort: 8080}
  - {name: p2, containerPort: 81}
  - {containerPort: 82}
  env:
  - {name: ev1, value: val1}
  - {name: ev2, value: val2}
  - {key: EV3, value: val3}
  volumeMounts:
  - {name: vol1, mountPath: /foo}
  - {name: vol1, path: /bar}
`,
    ],
  ] as const) {
    test(`accepts ${what}`, () => {
      expect(read(text).map(formatIssue)).toEqual([]);
    });
  }

  for (const [what, text, error] of [
    ["an empty version", '{version: "", id: abc}', "kind: Required value"],
    ["a bogus version", "{version: bogus, id: abc}", "kind: Required value"],
    ["a volume name with a dot", "{version: v1beta1, id: abc, volumes: [{name: vol.1}]}", "spec.volumes[0].name"],
    [
      "a container name with a dot",
      "{version: v1beta1, id: abc, containers: [{name: ctr.1, image: image}]}",
      "spec.containers[0].name",
    ],
  ] as const) {
    test(`refuses ${what}`, () => {
      expect(
        read(text)
          .map(formatIssue)
          .some((line) => line.startsWith(error)),
      ).toBe(true);
    });
  }

  test("a v1 Pod still needs containers", () => {
    expect(read("{apiVersion: v1, kind: Pod, metadata: {name: a}, spec: {}}").map(formatIssue)).toEqual([
      "spec.containers: Required value",
    ]);
  });
});
