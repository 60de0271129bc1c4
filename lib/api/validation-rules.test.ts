import { describe, expect, test } from "bun:test";
import { readManifests } from "./manifest.ts";
import { formatIssue } from "./types.ts";
import { validatePod } from "./validation.ts";

// The rules no manifest in testdata/manifests reaches, each with its exact field path and Kubernetes
// wording (operators read them): one row per rule, a one-container pod plus the lines under test.
const pod = (container: string, spec = "") =>
  `apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: c\n    image: busybox\n${container}${spec}`;

/** The errors `run` reports for a manifest, as printed. */
function errorsOf(text: string): string[] {
  const { pods, rejected } = readManifests(text, { source: "file", origin: "rules.yaml" });
  expect(rejected).toEqual([]);
  return pods
    .flatMap((p) => validatePod(p, { allowPrivileged: false }))
    .filter((i) => i.severity === "error")
    .map(formatIssue);
}

const C = "spec.containers[0]";
const DOWNWARD_FIELDS =
  '"metadata.name", "metadata.namespace", "metadata.uid", "metadata.labels", "metadata.annotations", metadata.labels[\'<KEY>\'], metadata.annotations[\'<KEY>\']';
const rows: Array<[string, string, string[]]> = [
  [
    "an unknown dnsPolicy is refused with the supported values",
    pod("", "  dnsPolicy: Foo\n"),
    [
      'spec.dnsPolicy: Unsupported value: "Foo": supported values: "ClusterFirst", "ClusterFirstWithHostNet", "Default", "None"',
    ],
  ],
  [
    "a negative runAsUser is refused with the range",
    pod("    securityContext: {runAsUser: -1}\n"),
    [`${C}.securityContext.runAsUser: Invalid value: -1: must be between 0 and 2147483647, inclusive`],
  ],
  [
    "a probe's httpGet scheme is HTTP or HTTPS",
    pod("    readinessProbe: {httpGet: {port: 80, scheme: FTP}}\n"),
    [`${C}.readinessProbe.httpGet.scheme: Unsupported value: "FTP": supported values: "HTTP", "HTTPS"`],
  ],
  [
    "a probe's delays and periods have their minimums, 0 for initialDelaySeconds and 1 for the rest",
    pod("    readinessProbe: {exec: {command: [x]}, periodSeconds: 0, initialDelaySeconds: -1, failureThreshold: 0}\n"),
    [
      `${C}.readinessProbe.initialDelaySeconds: Invalid value: -1: must be greater than or equal to 0`,
      `${C}.readinessProbe.periodSeconds: Invalid value: 0: must be greater than or equal to 1`,
      `${C}.readinessProbe.failureThreshold: Invalid value: 0: must be greater than or equal to 1`,
    ],
  ],
  [
    "a probe's or hook's port is required and must be a port number",
    pod(
      "    livenessProbe: {tcpSocket: {port: 0}}\n    readinessProbe: {httpGet: {}}\n    startupProbe: {grpc: {port: 70000}}\n",
    ),
    [
      `${C}.livenessProbe.tcpSocket.port: Invalid value: 0: must be between 1 and 65535, inclusive`,
      `${C}.readinessProbe.httpGet.port: Required value`,
      `${C}.startupProbe.grpc.port: Invalid value: 70000: must be between 1 and 65535, inclusive`,
    ],
  ],
  [
    "a gRPC probe needs a port",
    pod("    livenessProbe: {grpc: {}}\n"),
    [`${C}.livenessProbe.grpc.port: Required value`],
  ],
  [
    "an exec hook needs a command and a sleep hook a non-negative number of seconds",
    pod("    lifecycle: {postStart: {exec: {command: []}}, preStop: {sleep: {seconds: -1}}}\n"),
    [
      `${C}.lifecycle.postStart.exec.command: Required value`,
      `${C}.lifecycle.preStop.sleep.seconds: Invalid value: -1: must be greater than or equal to 0`,
    ],
  ],
  ["a sleep hook of 0 seconds is valid", pod("    lifecycle: {preStop: {sleep: {seconds: 0}}}\n"), []],
  [
    "a port given as a string is a number when all digits, else a port name, which gRPC probes do not take",
    pod(
      "    ports: [{containerPort: 80, name: h2}]\n" +
        "    livenessProbe: {httpGet: {port: '8080'}}\n    readinessProbe: {httpGet: {port: h2}}\n" +
        "    startupProbe: {tcpSocket: {port: '70000'}}\n" +
        "    lifecycle: {postStart: {httpGet: {port: x80}}, preStop: {tcpSocket: {port: 80x}}}\n" +
        "  - name: n\n    image: busybox\n    ports: [{containerPort: 90, name: 2h}]\n    livenessProbe: {tcpSocket: {port: 2h}}\n" +
        "  - name: g\n    image: busybox\n" +
        "    livenessProbe: {grpc: {port: '70000'}}\n    readinessProbe: {grpc: {port: x1}}\n    startupProbe: {grpc: {port: 1x}}\n",
    ),
    [
      `${C}.startupProbe.tcpSocket.port: Invalid value: "70000": must be between 1 and 65535, inclusive`,
      `${C}.lifecycle.postStart.httpGet.port: Invalid value: "x80": must be a port number or the name of a port of this container`,
      `${C}.lifecycle.preStop.tcpSocket.port: Invalid value: "80x": must be a port number or the name of a port of this container`,
      'spec.containers[2].livenessProbe.grpc.port: Invalid value: "70000": must be between 1 and 65535, inclusive',
      'spec.containers[2].readinessProbe.grpc.port: Invalid value: "x1": must be a port number (gRPC probes take no named ports)',
      'spec.containers[2].startupProbe.grpc.port: Invalid value: "1x": must be a port number (gRPC probes take no named ports)',
    ],
  ],
  ["only an httpGet handler has a scheme", pod("    livenessProbe: {tcpSocket: {port: 80, scheme: FTP}}\n"), []],
  [
    "a secret volume needs its secretName, and each item a key, a relative path of its own and a mode up to 0777",
    pod(
      "",
      "  volumes:\n  - name: v\n    secret:\n      defaultMode: -1\n      items:\n" +
        "      - {key: a, path: /abs}\n      - {key: b, path: x/../y}\n      - {key: c, path: ..z}\n" +
        "      - {key: d, path: ok, mode: 0}\n      - {key: e, path: ok, mode: 512}\n      - {path: q, mode: 511}\n" +
        "      - {key: '..k', path: r}\n      - {key: f}\n",
    ),
    [
      "spec.volumes[0].secret.secretName: Required value",
      'spec.volumes[0].secret.items[0].path: Invalid value: "/abs": must be a relative path',
      "spec.volumes[0].secret.items[1].path: Invalid value: \"x/../y\": must not contain '..'",
      "spec.volumes[0].secret.items[2].path: Invalid value: \"..z\": must not start with '..'",
      'spec.volumes[0].secret.items[4].path: Invalid value: "ok": conflicting duplicate paths',
      "spec.volumes[0].secret.items[4].mode: Invalid value: 512: must be a number between 0 and 0777 (octal), both inclusive",
      "spec.volumes[0].secret.items[5].key: Required value",
      "spec.volumes[0].secret.items[6].key: Invalid value: \"..k\": must not start with '..'",
      "spec.volumes[0].secret.items[7].path: Required value",
      "spec.volumes[0].secret.defaultMode: Invalid value: -1: must be a number between 0 and 0777 (octal), both inclusive",
    ],
  ],
  [
    "a configMap volume's defaultMode is at most 0777",
    pod("", "  volumes: [{name: v, configMap: {name: m, defaultMode: 0o1000}}]\n"),
    [
      "spec.volumes[0].configMap.defaultMode: Invalid value: 512: must be a number between 0 and 0777 (octal), both inclusive",
    ],
  ],
  [
    "a projected volume's sources are checked as the volumes they name, and it may have none",
    pod(
      "",
      "  volumes:\n  - name: v\n    projected:\n      defaultMode: 1000\n      sources:\n" +
        "      - configMap: {items: [{key: a, path: /x}]}\n      - secret: {items: [{key: b, path: y}]}\n" +
        "      - downwardAPI: {items: [{path: d}]}\n      - downwardAPI: {}\n" +
        "      - clusterTrustBundle: {path: b}\n  - name: w\n    projected: {}\n",
    ),
    [
      "spec.volumes[0].projected.sources[4].clusterTrustBundle: Unsupported value: cluster trust bundles live in an API server, which a standalone kubelet does not have",
      "spec.volumes[0].projected.defaultMode: Invalid value: 1000: must be a number between 0 and 0777 (octal), both inclusive",
      "spec.volumes[0].projected.sources[0].configMap.name: Required value",
      'spec.volumes[0].projected.sources[0].configMap.items[0].path: Invalid value: "/x": must be a relative path',
      "spec.volumes[0].projected.sources[1].secret.name: Required value",
      "spec.volumes[0].projected.sources[2].downwardAPI.items[0]: Required value: one of fieldRef and resourceFieldRef is required",
    ],
  ],
  [
    "an envFrom prefix must be a valid environment variable name",
    pod("    envFrom: [{prefix: 1x, configMapRef: {name: m}}]\n"),
    [
      `${C}.envFrom[0].prefix: Invalid value: "1x": a valid environment variable name must consist of alphabetic characters, digits, '_', '-', or '.', and must not start with a digit`,
    ],
  ],
  [
    "an env secretKeyRef key must be a valid config key",
    pod("    env: [{name: A, valueFrom: {secretKeyRef: {name: s, key: 'a b'}}}]\n"),
    [
      `${C}.env[0].valueFrom.secretKeyRef.key: Invalid value: "a b": a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')`,
    ],
  ],
  [
    "an extended resource is counted in whole devices, its request equal to its limit",
    pod(
      "    resources: {limits: {example.com/widget: 1, example.com/half: 500m, kubernetes.io/widget: 1, example.com/less: 2}, requests: {example.com/widget: 2, example.com/alone: 1, example.com/less: 1}}\n",
    ),
    [
      `${C}.resources.limits[example.com/half]: Invalid value: "500m": must be an integer`,
      `${C}.resources.limits[kubernetes.io/widget]: Unsupported value: "kubernetes.io/widget": supported values: "cpu", "memory"`,
      `${C}.resources.requests[example.com/widget]: Invalid value: "2": must be equal to example.com/widget limit of 1`,
      `${C}.resources.limits: Required value: Limit must be set for non overcommitable resources`,
      `${C}.resources.requests[example.com/less]: Invalid value: "1": must be equal to example.com/less limit of 2`,
    ],
  ],
  [
    "a resource other than cpu, memory, ephemeral-storage or hugepages is refused",
    pod("    resources: {limits: {gpu: 1, hugepages-2Mi: 1Gi, ephemeral-storage: 1Gi}}\n"),
    [`${C}.resources.limits[gpu]: Unsupported value: "gpu": supported values: "cpu", "memory"`],
  ],
  [
    "each projected source names exactly one volume type",
    pod("", "  volumes: [{name: v, projected: {sources: [{configMap: {name: m}, secret: {name: s}}, {}]}}]\n"),
    [
      "spec.volumes[0].projected.sources[0].secret: Forbidden: may not specify more than 1 volume type",
      "spec.volumes[0].projected.sources[1]: Required value: must specify exactly 1 volume type",
    ],
  ],
  [
    "a downwardAPI volume item takes one of fieldRef and resourceFieldRef, with a container, of the volume's fields",
    pod(
      "",
      "  volumes:\n  - name: v\n    downwardAPI:\n      defaultMode: 1000\n      items:\n" +
        "      - {path: a, fieldRef: {fieldPath: metadata.name}, resourceFieldRef: {resource: limits.cpu}}\n" +
        "      - {path: b}\n" +
        "      - {path: c, fieldRef: {fieldPath: spec.nodeName}}\n" +
        "      - {path: d, fieldRef: {fieldPath: \"metadata.labels['app']\"}}\n" +
        "      - {path: e, resourceFieldRef: {containerName: c, resource: limits.memory}}\n" +
        "      - {path: f, fieldRef: {fieldPath: \"xmetadata.labels['a']\"}}\n" +
        "      - {path: g, fieldRef: {fieldPath: \"metadata.annotations['a']x\"}}\n" +
        "      - {path: /h, mode: 512, fieldRef: {fieldPath: metadata.uid}}\n",
    ),
    [
      'spec.volumes[0].downwardAPI.items[0]: Invalid value: "": fieldRef and resourceFieldRef can not be specified simultaneously',
      "spec.volumes[0].downwardAPI.items[0].resourceFieldRef.containerName: Required value",
      "spec.volumes[0].downwardAPI.items[1]: Required value: one of fieldRef and resourceFieldRef is required",
      `spec.volumes[0].downwardAPI.items[2].fieldRef.fieldPath: Unsupported value: "spec.nodeName": supported values: ${DOWNWARD_FIELDS}`,
      `spec.volumes[0].downwardAPI.items[5].fieldRef.fieldPath: Unsupported value: "xmetadata.labels['a']": supported values: ${DOWNWARD_FIELDS}`,
      `spec.volumes[0].downwardAPI.items[6].fieldRef.fieldPath: Unsupported value: "metadata.annotations['a']x": supported values: ${DOWNWARD_FIELDS}`,
      'spec.volumes[0].downwardAPI.items[7].path: Invalid value: "/h": must be a relative path',
      "spec.volumes[0].downwardAPI.items[7].mode: Invalid value: 512: must be a number between 0 and 0777 (octal), both inclusive",
      "spec.volumes[0].downwardAPI.defaultMode: Invalid value: 1000: must be a number between 0 and 0777 (octal), both inclusive",
    ],
  ],
  [
    "ports 1 and 65535 and a port name of 15 characters are valid; 65536 and 16 characters are not",
    pod(
      "    ports: [{containerPort: 1, hostPort: 65535, name: abcdefghijklmno}, {containerPort: 65536, name: abcdefghijklmnop}]\n",
    ),
    [
      `${C}.ports[1].containerPort: Invalid value: 65536: must be between 1 and 65535, inclusive`,
      `${C}.ports[1].name: Invalid value: "abcdefghijklmnop": must be no more than 15 characters, contain only lowercase alphanumerics and '-', contain at least one letter, and not start or end with '-' or contain '--'`,
    ],
  ],
  [
    "a negative numeric probe port is out of range, not a port name",
    pod("    livenessProbe: {httpGet: {port: -1}}\n    readinessProbe: {grpc: {port: -1}}\n"),
    [
      `${C}.livenessProbe.httpGet.port: Invalid value: -1: must be between 1 and 65535, inclusive`,
      `${C}.readinessProbe.grpc.port: Invalid value: -1: must be between 1 and 65535, inclusive`,
    ],
  ],
  [
    "under hostNetwork a port without a hostPort or with its containerPort as hostPort is valid, another hostPort is not",
    pod(
      "    ports: [{containerPort: 80}, {containerPort: 81, hostPort: 82}, {containerPort: 83, hostPort: 83}]\n",
      "  hostNetwork: true\n",
    ),
    [`${C}.ports[1].hostPort: Invalid value: 82: must match \`containerPort\` when \`hostNetwork\` is true`],
  ],
  [
    "requests equal to limits, zero quantities and user and group 0 are valid",
    pod(
      "    resources: {limits: {cpu: 500m, memory: 0}, requests: {cpu: 500m, memory: 0}}\n" +
        "    securityContext: {runAsUser: 0, runAsGroup: 0}\n",
    ),
    [],
  ],
  [
    "a negative quantity is refused",
    pod("    resources: {limits: {cpu: '-1'}}\n"),
    [
      `${C}.resources.limits[cpu]: Invalid value: "-1": quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'`,
    ],
  ],
  [
    "an env key reference and an envFrom source need the name of their ConfigMap or Secret",
    pod(
      "    env: [{name: A, valueFrom: {configMapKeyRef: {key: k}}}, {name: B, valueFrom: {secretKeyRef: {key: k}}}]\n" +
        "    envFrom: [{prefix: P_}, {configMapRef: {}}, {secretRef: {}}]\n",
    ),
    [
      `${C}.env[0].valueFrom.configMapKeyRef.name: Required value`,
      `${C}.env[1].valueFrom.secretKeyRef.name: Required value`,
      `${C}.envFrom[0]: Required value: one of configMapRef or secretRef is required`,
      `${C}.envFrom[1].configMapRef.name: Required value`,
      `${C}.envFrom[2].secretRef.name: Required value`,
    ],
  ],
  [
    "a RestartContainer resize policy is valid under the pod's restartPolicy OnFailure",
    pod("    resizePolicy: [{resourceName: cpu, restartPolicy: RestartContainer}]\n", "  restartPolicy: OnFailure\n"),
    [],
  ],
  [
    "two wrongly typed fields are reported once each, and nothing about them after",
    pod("    ports: [{containerPort: abc}]\n", "  terminationGracePeriodSeconds: x\n"),
    [
      'spec.terminationGracePeriodSeconds: Invalid value: "x": must be an integer, not a string',
      `${C}.ports[0].containerPort: Invalid value: "abc": must be an integer, not a string`,
    ],
  ],
  [
    "an exec command whose every item is wrongly typed is also missing",
    pod("    livenessProbe: {exec: {command: [1, 2]}}\n"),
    [
      `${C}.livenessProbe.exec.command[0]: Invalid value: must be a string, not 1 (quote it: "1")`,
      `${C}.livenessProbe.exec.command[1]: Invalid value: must be a string, not 2 (quote it: "2")`,
      `${C}.livenessProbe.exec.command: Required value`,
    ],
  ],
  [
    "a container that is not an object is reported alone and the next container keeps its index",
    "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - x\n  - {name: c, image: busybox, imagePullPolicy: Foo}\n",
    [
      'spec.containers[0]: Invalid value: "x": must be an object, not a string',
      'spec.containers[1].imagePullPolicy: Unsupported value: "Foo": supported values: "Always", "IfNotPresent", "Never"',
    ],
  ],
];

describe("validation rules, each with its Kubernetes field path and wording", () => {
  for (const [name, text, expected] of rows) test(name, () => expect(errorsOf(text)).toEqual(expected));
});

test("a sensitive hostPath is an error, and a warning with allowSensitiveHostPaths", () => {
  const { pods } = readManifests(
    pod("    volumeMounts: [{name: v, mountPath: /h}]\n", "  volumes: [{name: v, hostPath: {path: /}}]\n"),
    { source: "file", origin: "rules.yaml" },
  );
  const severities = (allowSensitiveHostPaths: boolean) =>
    validatePod(pods[0]!, { allowPrivileged: false, allowSensitiveHostPaths }).map((i) => [i.path, i.severity]);
  expect(severities(false)).toEqual([["spec.volumes[0].hostPath.path", "error"]]);
  expect(severities(true)).toEqual([["spec.volumes[0].hostPath.path", "warning"]]);
});
