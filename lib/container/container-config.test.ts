// Pod → CRI configs (container-config.ts), read at the CRI itself: the fields the Go kubelet's
// generatePodSandboxConfig and generateContainerConfig set that a Docker body does not show, and the
// errors (with their reasons) that stop a container from being created.
import { describe, expect, test } from "bun:test";
import type { ConfigObject } from "../api/config-objects.ts";
import { ANNOTATION, KubeletError, type Pod, type V1Container, type V1PodSpec } from "../api/types.ts";
import { testConfig, testPod } from "../testing/pods.ts";
import {
  containerConfig,
  containerLinuxResources,
  podSandboxConfig,
  resolveEnv,
  runtimeHandler,
  type ContainerContext,
} from "./container-config.ts";

const objects: ConfigObject[] = [testConfig("ConfigMap", "settings", { data: { "1st": "one", mode: "fast" } })];
const ctx: ContainerContext = {
  attempt: 2,
  init: false,
  nodeName: "node-1",
  configs: {
    get: (kind, namespace, name) =>
      objects.find((o) => o.kind === kind && o.metadata.namespace === namespace && o.metadata.name === name),
  },
  hostIP: "10.0.0.1",
  allowPrivileged: false,
  podIP: "10.1.0.9",
  volumePaths: new Map([["data", { hostPath: "/var/lib/kubelet/pods/u/volumes/data" }]]),
  networkMode: "bridge",
  node: { cpus: 4, memoryBytes: 8 * 2 ** 30 },
};
const app: V1Container = { name: "app", image: "local/busybox:stable" };
const pod = (spec: Partial<V1PodSpec> = {}) => testPod("web", { containers: [app], ...spec });
const config = (container: Partial<V1Container> = {}, over: Partial<ContainerContext> = {}, p: Pod = pod()) =>
  containerConfig(p, { ...app, ...container }, { ...ctx, ...over });
const mounts = (container: Partial<V1Container>, over: Partial<ContainerContext> = {}) =>
  config(container, over).mounts;
/** The KubeletError `run` throws, as its reason and message. */
const failure = (run: () => unknown) => {
  try {
    run();
  } catch (error) {
    if (error instanceof KubeletError) return { code: error.code, message: error.message };
    throw error;
  }
  throw new Error("no KubeletError thrown");
};

describe("the sandbox config", () => {
  test("a pod's own namespaces: POD network and IPC, CONTAINER PID, or POD PID with shareProcessNamespace", () => {
    const own = { network: "POD", ipc: "POD", pid: "CONTAINER" } as const;
    expect(podSandboxConfig(pod(), ctx, 0).linux?.security_context?.namespace_options).toEqual(own);
    expect(config().linux?.security_context?.namespace_options).toEqual(own);
    const shared = podSandboxConfig(pod({ shareProcessNamespace: true }), ctx, 0);
    expect(shared.linux?.security_context?.namespace_options).toEqual({ ...own, pid: "POD" });
  });

  test("a host-network sandbox has an empty hostname, whatever the pod's hostname says", () => {
    expect(podSandboxConfig(pod({ hostNetwork: true, hostname: "db-0" }), ctx, 0).hostname).toBe("");
  });

  test("setHostnameAsFQDN with a subdomain names the sandbox by its FQDN in the cluster domain; with no cluster domain, by the short name", () => {
    const p = pod({ hostname: "db-0", subdomain: "db", setHostnameAsFQDN: true });
    expect(podSandboxConfig(p, { ...ctx, clusterDomain: "cluster.local" }, 0).hostname).toBe(
      "db-0.db.default.svc.cluster.local",
    );
    expect(podSandboxConfig(p, ctx, 0).hostname).toBe("db-0");
  });

  test("--pod_logs_dir gives the sandbox the log directory <dir>/<namespace>_<name>_<uid>; without it there is none", () => {
    const p = pod();
    expect(podSandboxConfig(p, { ...ctx, podLogsDir: "/var/log/pods" }, 0).log_directory).toBe(
      `/var/log/pods/default_web_${p.metadata.uid}`,
    );
    expect(podSandboxConfig(p, ctx, 0)).not.toHaveProperty("log_directory");
  });

  test("a pod without a config-source annotation has an empty source label", () => {
    const p = pod();
    const bare = { ...p, metadata: { ...p.metadata, annotations: {} } };
    expect(podSandboxConfig(bare, ctx, 0).labels?.[ANNOTATION.source]).toBe("");
  });

  test("the runtime handler is the one configured for the pod's runtimeClassName, else the class name, and the default ('') without a class", () => {
    const handlers = { gvisor: "runsc" };
    expect(runtimeHandler(pod({ runtimeClassName: "gvisor" }), handlers)).toBe("runsc");
    expect(runtimeHandler(pod({ runtimeClassName: "kata" }), handlers)).toBe("kata");
    expect(runtimeHandler(pod(), handlers)).toBe("");
  });
});

describe("a container config", () => {
  test("the CPU and memory managers' cpusets reach cpuset_cpus and cpuset_mems, and nothing when they set none", () => {
    const cpusets = (name: string) => (name === "app" ? { cpus: "1", mems: "0" } : {});
    expect(config({}, { cpusets }).linux?.resources).toMatchObject({ cpuset_cpus: "1", cpuset_mems: "0" });
    expect(config({ name: "other" }, { cpusets }).linux?.resources).not.toHaveProperty("cpuset_cpus");
    expect(config().linux?.resources).not.toHaveProperty("cpuset_mems");
  });

  test("its log path is <container>/<attempt>.log, relative to the sandbox's log directory", () => {
    expect(config().log_path).toBe("app/2.log");
  });

  test("stdin_once holds only with stdin", () => {
    expect([config({ stdinOnce: true }).stdin_once, config({ stdin: true, stdinOnce: true }).stdin_once]).toEqual([
      false,
      true,
    ]);
  });

  test("a terminationMessagePath is labelled with its policy, File when none is set", () => {
    const labels = (policy?: string) =>
      config({ terminationMessagePath: "/tmp/end", ...(policy ? { terminationMessagePolicy: policy } : {}) }).labels;
    expect(labels()).toMatchObject({
      "io.kubernetes.container.terminationMessagePath": "/tmp/end",
      "io.kubernetes.container.terminationMessagePolicy": "File",
    });
    expect(labels("FallbackToLogsOnError")?.["io.kubernetes.container.terminationMessagePolicy"]).toBe(
      "FallbackToLogsOnError",
    );
  });

  test("a Guaranteed container gets oom_score_adj -997 (GetContainerOOMScoreAdjust), the kernel's floor permitting", () => {
    const resources = { limits: { cpu: "1", memory: "64Mi" }, requests: { cpu: "1", memory: "64Mi" } };
    const guaranteed = pod({ containers: [{ ...app, resources }] });
    expect(config({ resources }, {}, guaranteed).linux?.resources?.oom_score_adj).toBe(-997);
    expect(config({ resources }, { oomScoreAdjMin: 0 }, guaranteed).linux?.resources?.oom_score_adj).toBe(0);
  });

  test("without a cpu limit the container has no CFS quota", () => {
    expect(containerLinuxResources({ ...app, resources: { requests: { cpu: "1" } } }, {}).cpu_quota).toBe(0);
  });

  test("runAsGroup without a user is not applied: the runtime sets a group only with a user", () => {
    const security = (p: Pod) => config({}, {}, p).linux?.security_context;
    expect(security(pod({ securityContext: { runAsGroup: 3000 } }))).not.toHaveProperty("run_as_group");
    expect(security(pod({ securityContext: { runAsUser: 1000, runAsGroup: 3000 } }))).toMatchObject({
      run_as_user: { value: 1000 },
      run_as_group: { value: 3000 },
    });
  });

  test("a privileged container is refused with reason Forbidden unless the kubelet allows privileged mode", () => {
    expect(failure(() => config({ securityContext: { privileged: true } }))).toEqual({
      code: "Forbidden",
      message: "container app: privileged mode is disallowed (start the kubelet with --allow_privileged)",
    });
  });

  test("runAsNonRoot passes when the image's user is not root", () => {
    const nonRoot = { securityContext: { runAsNonRoot: true } };
    expect(config(nonRoot, { imageUser: { uid: 1000 } }).metadata.name).toBe("app");
    expect(failure(() => config(nonRoot)).code).toBe("CreateContainerConfigError");
  });
});

describe("a container config's mounts", () => {
  const data = { name: "data", mountPath: "/data" };
  const volume = "/var/lib/kubelet/pods/u/volumes/data";

  test("the termination log is mounted read-write at terminationMessagePath from the host file given", () => {
    expect(
      mounts({ terminationMessagePath: "/dev/termination-log" }, { terminationLog: "/pods/u/app-log" }),
    ).toStrictEqual([{ host_path: "/pods/u/app-log", container_path: "/dev/termination-log" }]);
    expect(mounts({ terminationMessagePath: "/dev/termination-log" })).toStrictEqual([]);
  });

  test("the pod's hosts file is mounted read-write at /etc/hosts and resolv.conf read-only, unless the container mounts its own there", () => {
    const node = { hostsPath: "/pods/u/etc-hosts", resolvConfPath: "/pods/u/resolv.conf" };
    expect(mounts({ volumeMounts: [data] }, node)).toStrictEqual([
      { host_path: volume, container_path: "/data" },
      { host_path: "/pods/u/resolv.conf", container_path: "/etc/resolv.conf", readonly: true },
      { host_path: "/pods/u/etc-hosts", container_path: "/etc/hosts" },
    ]);
    expect(mounts({ volumeMounts: [{ name: "data", mountPath: "/etc/hosts" }] }, node)).toStrictEqual([
      { host_path: volume, container_path: "/etc/hosts" },
      { host_path: "/pods/u/resolv.conf", container_path: "/etc/resolv.conf", readonly: true },
    ]);
  });

  test("propagation is named for HostToContainer and Bidirectional (a privileged container's); None and unset leave the CRI's default, private", () => {
    const propagated = mounts(
      {
        securityContext: { privileged: true },
        volumeMounts: [
          { ...data, mountPropagation: "HostToContainer" },
          { name: "data", mountPath: "/shared", mountPropagation: "Bidirectional" },
          { name: "data", mountPath: "/private", mountPropagation: "None" },
          { name: "data", mountPath: "/plain", readOnly: true },
        ],
      },
      { allowPrivileged: true },
    );
    expect(propagated).toStrictEqual([
      { host_path: volume, container_path: "/data", propagation: "PROPAGATION_HOST_TO_CONTAINER" },
      { host_path: volume, container_path: "/shared", propagation: "PROPAGATION_BIDIRECTIONAL" },
      { host_path: volume, container_path: "/private" },
      { host_path: volume, container_path: "/plain", readonly: true },
    ]);
  });

  test("a volume not set up, or a subPath or subPathExpr not prepared, fails with reason VolumeSetupFailed", () => {
    expect(failure(() => mounts({ volumeMounts: [{ name: "nope", mountPath: "/x" }] }))).toEqual({
      code: "VolumeSetupFailed",
      message: 'container app: volume "nope" was not set up',
    });
    const unprepared = { code: "VolumeSetupFailed", message: 'container app: subPath of "data" was not prepared' };
    expect(failure(() => mounts({ volumeMounts: [{ ...data, subPath: "logs" }] }))).toEqual(unprepared);
    expect(failure(() => mounts({ volumeMounts: [{ ...data, subPathExpr: "$(POD)" }] }))).toEqual(unprepared);
  });

  test("Bidirectional propagation unprivileged, or recursive read-only, fails with reason CreateContainerConfigError", () => {
    const bidirectional = failure(() => mounts({ volumeMounts: [{ ...data, mountPropagation: "Bidirectional" }] }));
    expect(bidirectional.code).toBe("CreateContainerConfigError");
    expect(failure(() => mounts({ volumeMounts: [{ ...data, recursiveReadOnly: "Enabled" }] }))).toEqual({
      code: "CreateContainerConfigError",
      message:
        'failed to resolve recursive read-only mode: volume "data" requested recursive read-only mode, but it is not supported by the runtime',
    });
    expect(mounts({ volumeMounts: [{ ...data, readOnly: true, recursiveReadOnly: "Disabled" }] })).toStrictEqual([
      { host_path: volume, container_path: "/data", readonly: true },
    ]);
  });
});

describe("a container's environment", () => {
  const env = (container: Partial<V1Container>) => Object.fromEntries(resolveEnv(pod(), { ...app, ...container }, ctx));

  test("envFrom keys are checked as variable names with their prefix, which can make a key valid", () => {
    expect(env({ envFrom: [{ prefix: "P_", configMapRef: { name: "settings" } }] })).toEqual({
      P_1st: "one",
      P_mode: "fast",
    });
  });

  test("an optional envFrom whose object is missing adds nothing", () => {
    expect(env({ envFrom: [{ configMapRef: { name: "absent", optional: true } }] })).toEqual({});
  });

  test("a variable with neither value nor valueFrom is empty", () => {
    expect(env({ env: [{ name: "EMPTY" }] })).toEqual({ EMPTY: "" });
  });

  test("a missing ConfigMap or Secret, or a reference without a name, fails with reason CreateContainerConfigError and the kubelet's message", () => {
    expect(failure(() => env({ envFrom: [{ secretRef: { name: "absent" } }] }))).toEqual({
      code: "CreateContainerConfigError",
      message: 'secret "absent" not found',
    });
    expect(failure(() => env({ envFrom: [{ configMapRef: {} }] })).message).toBe('configmap "" not found');
    const unnamed = { name: "X", valueFrom: { configMapKeyRef: { key: "mode" } } };
    expect(failure(() => env({ env: [unnamed] })).message).toBe('configmap "" not found');
  });

  test("a missing key fails with reason CreateContainerConfigError, an unsupported fieldRef with InvalidValue", () => {
    const missingKey = { name: "X", valueFrom: { configMapKeyRef: { name: "settings", key: "nope" } } };
    expect(failure(() => env({ env: [missingKey] }))).toEqual({
      code: "CreateContainerConfigError",
      message: "couldn't find key nope in ConfigMap default/settings",
    });
    expect(failure(() => env({ env: [{ name: "X", valueFrom: { fieldRef: { fieldPath: "spec.nope" } } }] }))).toEqual({
      code: "InvalidValue",
      message: "unsupported fieldRef spec.nope",
    });
  });
});

describe("a container's device plugin resources", () => {
  const devices = {
    envs: [
      { key: "WIDGET_IDS", value: "w0" },
      { key: "MODE", value: "plugin" },
    ],
    mounts: [{ container_path: "/run/widget", host_path: "/var/lib/widget", readonly: true }],
    devices: [{ container_path: "/dev/w0", host_path: "/dev/null", permissions: "rw" }],
    annotations: { "example.com/widget": "w0" },
    cdiDevices: ["example.com/widget=w0"],
  };

  test("devices, CDI names, annotations, mounts and envs from Allocate reach the ContainerConfig, the container's own env after the plugin's", () => {
    const c = config({ env: [{ name: "MODE", value: "own" }] }, { devices });
    expect(c.devices).toEqual(devices.devices);
    expect(c.CDI_devices).toEqual([{ name: "example.com/widget=w0" }]);
    expect(c.annotations).toEqual({ "example.com/widget": "w0" });
    expect(c.mounts?.[0]).toEqual(devices.mounts[0]);
    expect(c.envs?.slice(0, 3)).toEqual([...devices.envs, { key: "MODE", value: "own" }]);
  });

  test("a container without device plugin resources gets no devices, CDI names or annotations", () => {
    const c = config();
    expect([c.devices, c.CDI_devices, c.annotations]).toEqual([undefined, undefined, undefined]);
  });
});
