// Pod → CRI configs (container-config.ts) → Docker create bodies (docker-shim.ts): the pause
// container and app containers, exact to the field, with the dockershim names and labels, $(VAR)
// expansion, downward API, resources and security settings. These are the bodies every earlier
// version wrote, so a node upgraded in place adopts its containers (test/e2e/upgrade.test.ts).
import { describe, expect, test } from "bun:test";
import { containerFieldHashes, containerHash, podSandboxHash, sandboxFieldHashes } from "../../api/hash.ts";
import { ANNOTATION, type Pod, type V1Container, type V1PodSpec } from "../../api/types.ts";
import { testPod } from "../../testing/pods.ts";
import {
  containerConfig,
  podSandboxConfig,
  resolveEnv,
  type ContainerContext,
  type PodContext,
} from "../container-config.ts";
import { containerBody, sandboxBody, securityOpts } from "./docker-shim.ts";
import { dockerName } from "../dockershim-naming.ts";
import { LABEL } from "../runtime.ts";

const ctx: PodContext & { pauseImage: string } = {
  nodeName: "node-1",
  hostIP: "10.0.0.1",
  podIP: "10.1.0.9",
  networkMode: "bridge",
  pauseImage: "registry.k8s.io/pause:3.9",
  allowPrivileged: false,
  volumePaths: new Map([["data", { hostPath: "/var/lib/kubelet/pods/u/volumes/data" }]]),
  node: { cpus: 4, memoryBytes: 8 * 2 ** 30 },
  configs: { get: () => undefined },
};
const app: V1Container = { name: "app", image: "local/busybox:stable" };
const pod = (spec: Partial<V1PodSpec> = {}, labels?: Record<string, string>) => {
  const p = testPod("web", { containers: [app], ...spec });
  return labels ? { ...p, metadata: { ...p.metadata, labels } } : p;
};
/** The pause container's body: the sandbox config through the shim configured as the kubelet's flags say. */
const buildPauseContainer = (p: Pod, c: typeof ctx) =>
  sandboxBody(podSandboxConfig(p, c, 0), { podInfraImage: c.pauseImage, podNetworkMode: c.networkMode });
/** An app or init container's body in sandbox "pause-id". */
const buildContainer = (
  p: Pod,
  container: V1Container,
  c: PodContext & { attempt: number; init: boolean; terminationLog?: string },
) => containerBody("pause-id", containerConfig(p, container, c), podSandboxConfig(p, c, 0));
const body = (p: Pod, container: V1Container = p.spec.containers[0]!, over: Partial<ContainerContext> = {}) =>
  buildContainer(p, container, { ...ctx, ...over, attempt: 2, init: false });

test("a container's cpusets become HostConfig CpusetCpus and CpusetMems", () => {
  const host = body(testPod("pinned"), undefined, { cpusets: () => ({ cpus: "1", mems: "0" }) }).HostConfig;
  expect([host.CpusetCpus, host.CpusetMems]).toEqual(["1", "0"]);
  expect(body(testPod("free")).HostConfig).not.toHaveProperty("CpusetCpus");
});

describe("the pause container", () => {
  test("owns the network and IPC namespaces, with the pod's labels and sandbox hash", () => {
    const p = pod({}, { tier: "web" });
    expect(buildPauseContainer(p, ctx)).toEqual({
      name: `k8s_POD_web_default_${p.metadata.uid}_0`,
      Image: "registry.k8s.io/pause:3.9",
      Labels: {
        tier: "web",
        [LABEL.podName]: "web",
        [LABEL.podNamespace]: "default",
        [LABEL.podUid]: p.metadata.uid,
        [LABEL.terminationGracePeriod]: "30",
        [ANNOTATION.source]: "file",
        [LABEL.containerName]: "POD",
        [LABEL.containerType]: "podsandbox",
        [LABEL.podHash]: podSandboxHash(p, "bridge"),
        [LABEL.fieldHashes]: sandboxFieldHashes(p, "bridge"),
        [LABEL.restartCount]: "0",
      },
      Hostname: "web",
      HostConfig: {
        NetworkMode: "bridge",
        IpcMode: "shareable",
        CpuShares: 2,
        OomScoreAdj: -998,
        LogConfig: { Type: "json-file", Config: { "max-size": "10m", "max-file": "5" } },
      },
    });
  });

  test("publishes every hostPort of every container, init containers included", () => {
    const p = pod({
      initContainers: [{ name: "init", image: "x", ports: [{ containerPort: 53, hostPort: 5353, protocol: "UDP" }] }],
      containers: [
        {
          ...app,
          ports: [
            { containerPort: 80, hostPort: 8080, hostIP: "127.0.0.1" },
            { containerPort: 80, hostPort: 8081 },
            { containerPort: 9090 },
          ],
        },
      ],
    });
    const pause = buildPauseContainer(p, ctx);
    expect(pause.ExposedPorts).toEqual({ "53/udp": {}, "80/tcp": {} });
    expect(pause.HostConfig.PortBindings).toEqual({
      "53/udp": [{ HostIp: "", HostPort: "5353" }],
      "80/tcp": [
        { HostIp: "127.0.0.1", HostPort: "8080" },
        { HostIp: "", HostPort: "8081" },
      ],
    });
  });

  test("host network, IPC and PID; no hostname on host or none networks; a set hostname wins", () => {
    const host = buildPauseContainer(
      pod({
        hostNetwork: true,
        hostIPC: true,
        hostPID: true,
        containers: [{ ...app, ports: [{ containerPort: 80, hostPort: 80 }] }],
      }),
      ctx,
    );
    expect(host.HostConfig).toMatchObject({ NetworkMode: "host", IpcMode: "host", PidMode: "host" });
    expect(host.Hostname).toBeUndefined();
    expect(host.ExposedPorts).toBeUndefined();
    expect(host.HostConfig.PortBindings).toBeUndefined();
    expect(buildPauseContainer(pod(), { ...ctx, networkMode: "none" }).Hostname).toBeUndefined();
    expect(buildPauseContainer(pod({ hostname: "db-0" }), ctx).Hostname).toBe("db-0");
    expect(buildPauseContainer(pod(), ctx).HostConfig.PidMode).toBeUndefined();
  });
});

describe("an app container", () => {
  test("joins the pause container's namespaces, with the dockershim name and labels", () => {
    const p = pod({ terminationGracePeriodSeconds: 5 });
    expect(body(p)).toEqual({
      name: `k8s_app_web_default_${p.metadata.uid}_2`,
      Image: "local/busybox:stable",
      Env: [],
      Labels: {
        [LABEL.podName]: "web",
        [LABEL.podNamespace]: "default",
        [LABEL.podUid]: p.metadata.uid,
        [LABEL.terminationGracePeriod]: "5",
        [ANNOTATION.source]: "file",
        [LABEL.containerName]: "app",
        [LABEL.containerType]: "container",
        [LABEL.containerHash]: containerHash(p.spec.containers[0]!),
        [LABEL.restartCount]: "2",
        [LABEL.fieldHashes]: containerFieldHashes(p.spec.containers[0]!),
        [LABEL.terminationMessagePath]: "/dev/termination-log",
        [LABEL.terminationMessagePolicy]: "File",
      },
      HostConfig: {
        NetworkMode: "container:pause-id",
        IpcMode: "container:pause-id",
        Binds: [],
        CpuShares: 2,
        OomScoreAdj: 1000,
        // No seccomp profile named and seccompDefault off: Unconfined, as the Go kubelet asks for it.
        SecurityOpt: ["seccomp=unconfined"],
        LogConfig: { Type: "json-file", Config: { "max-size": "10m", "max-file": "5" } },
      },
    });
    expect(dockerName(podSandboxConfig(p, ctx, 0), "app", 7)).toBe(`k8s_app_web_default_${p.metadata.uid}_7`);
  });

  test("an init container is labelled as one", () => {
    const p = pod();
    const init = buildContainer(p, app, { ...ctx, attempt: 0, init: true });
    expect(init.Labels[LABEL.initContainer]).toBe("true");
    expect(body(p).Labels[LABEL.initContainer]).toBeUndefined();
  });

  test("command and args become Entrypoint and Cmd with $(VAR) expanded; a command alone clears the image's Cmd", () => {
    const env = [
      { name: "A", value: "x" },
      { name: "B", value: "$(A)-y" },
    ];
    const both = body(pod(), { ...app, env, command: ["sh", "-c", "echo $(B)"], args: ["$(A)", "$$(A)", "$(NOPE)"] });
    expect(both.Entrypoint).toEqual(["sh", "-c", "echo x-y"]);
    expect(both.Cmd).toEqual(["x", "$(A)", "$(NOPE)"]);
    expect(both.Env).toEqual(["A=x", "B=x-y"]);
    expect(body(pod(), { ...app, command: ["run"] }).Cmd).toEqual([]);
    const argsOnly = body(pod(), { ...app, args: ["--flag"] });
    expect(argsOnly.Entrypoint).toBeUndefined();
    expect(argsOnly.Cmd).toEqual(["--flag"]);
  });

  test("the downward API: pod fields, labels and annotations by key, node and IPs", () => {
    const p = pod({ serviceAccountName: "robot" }, { app: "web" });
    const fields = [
      "metadata.name",
      "metadata.namespace",
      "metadata.uid",
      "spec.nodeName",
      "spec.serviceAccountName",
      "status.hostIP",
      "status.podIP",
      "status.podIPs",
      "metadata.labels['app']",
      "metadata.labels['missing']",
      `metadata.annotations['${ANNOTATION.source}']`,
    ];
    const env = resolveEnv(
      p,
      { ...app, env: fields.map((fieldPath, i) => ({ name: `F${i}`, valueFrom: { fieldRef: { fieldPath } } })) },
      ctx,
    );
    expect([...env.values()]).toEqual([
      "web",
      "default",
      p.metadata.uid,
      "node-1",
      "robot",
      "10.0.0.1",
      "10.1.0.9",
      "10.1.0.9",
      "web",
      "",
      "file",
    ]);
    expect(
      resolveEnv(
        pod(),
        { ...app, env: [{ name: "S", valueFrom: { fieldRef: { fieldPath: "spec.serviceAccountName" } } }] },
        ctx,
      ).get("S"),
    ).toBe("default");
    expect(() =>
      resolveEnv(pod(), { ...app, env: [{ name: "X", valueFrom: { fieldRef: { fieldPath: "spec.nope" } } }] }, ctx),
    ).toThrow("unsupported fieldRef spec.nope");
  });

  test("resource fieldRefs: the container's own value, the node's capacity for a missing limit, 0 for a missing request, divisors", () => {
    const resources = { limits: { memory: "64Mi" }, requests: { cpu: "250m" } };
    const refs: Array<[string, string | undefined]> = [
      ["limits.memory", undefined],
      ["limits.memory", "1Mi"],
      ["limits.cpu", undefined],
      ["limits.cpu", "1m"],
      ["requests.cpu", "1m"],
      ["requests.cpu", undefined],
      ["requests.memory", undefined],
      ["limits.memory", "0"],
    ];
    const env = resolveEnv(
      pod(),
      {
        ...app,
        resources,
        env: refs.map(([resource, divisor], i) => ({
          name: `R${i}`,
          valueFrom: { resourceFieldRef: { resource, ...(divisor ? { divisor } : {}) } },
        })),
      },
      ctx,
    );
    expect([...env.values()]).toEqual([String(64 * 2 ** 20), "64", "4", "4000", "250", "1", "0", String(64 * 2 ** 20)]);
  });

  test("memory and CPU limits and requests become Memory, CpuQuota/CpuPeriod and CpuShares", () => {
    const limited = body(pod(), {
      ...app,
      resources: { limits: { memory: "128Mi", cpu: "500m" }, requests: { cpu: "250m" } },
    });
    expect(limited.HostConfig).toMatchObject({
      Memory: 128 * 2 ** 20,
      MemorySwap: 128 * 2 ** 20,
      CpuQuota: 50_000,
      CpuPeriod: 100_000,
      CpuShares: 256,
    });
    // A limit alone is also the request; quota never goes under 1 ms per period; shares never under 2.
    const tiny = body(pod(), { ...app, resources: { limits: { cpu: "1m" } } });
    expect(tiny.HostConfig).toMatchObject({ CpuQuota: 1000, CpuShares: 2 });
    expect(body(pod(), { ...app, resources: { limits: { cpu: "2" } } }).HostConfig.CpuShares).toBe(2048);
    const none = body(pod()).HostConfig;
    expect([none.Memory, none.MemorySwap, none.CpuQuota, none.CpuPeriod]).toEqual([
      undefined,
      undefined,
      undefined,
      undefined,
    ]);
  });

  test("security context: user and group, privileged only when allowed, read-only root, capabilities, groups", () => {
    const secured = body(
      pod({ securityContext: { runAsUser: 1000, runAsGroup: 3000, supplementalGroups: [4000, 5000] } }),
      {
        ...app,
        securityContext: {
          runAsUser: 1001,
          readOnlyRootFilesystem: true,
          capabilities: { add: ["NET_ADMIN", "cap_sys_time"], drop: ["ALL"] },
        },
      },
    );
    expect(secured.User).toBe("1001:3000");
    expect(secured.HostConfig).toMatchObject({
      ReadonlyRootfs: true,
      CapAdd: ["NET_ADMIN", "SYS_TIME"],
      CapDrop: ["ALL"],
      GroupAdd: ["4000", "5000"],
    });
    expect(body(pod({ securityContext: { runAsUser: 7 } })).User).toBe("7");
    const plain = body(pod());
    expect([plain.User, plain.HostConfig.ReadonlyRootfs, plain.HostConfig.CapAdd, plain.HostConfig.GroupAdd]).toEqual([
      undefined,
      undefined,
      undefined,
      undefined,
    ]);
    const privileged = { ...app, securityContext: { privileged: true } };
    expect(() => body(pod(), privileged)).toThrow(
      "container app: privileged mode is disallowed (start the kubelet with --allow_privileged)",
    );
    expect(body(pod(), privileged, { allowPrivileged: true }).HostConfig.Privileged).toBe(true);
  });

  test("pod security fields: seccomp, no-new-privileges and AppArmor as security options, sysctls and fsGroup on the pause container and the groups, a shared PID namespace", () => {
    const p = pod({
      shareProcessNamespace: true,
      securityContext: {
        fsGroup: 2000,
        supplementalGroups: [3000],
        sysctls: [{ name: "kernel.shm_rmid_forced", value: "1" }],
        seccompProfile: { type: "RuntimeDefault" },
      },
    });
    const restricted = body(p, {
      ...app,
      securityContext: {
        allowPrivilegeEscalation: false,
        appArmorProfile: { type: "Localhost", localhostProfile: "k8s-web" },
      },
    });
    expect(restricted.HostConfig.SecurityOpt).toEqual(["no-new-privileges", "apparmor=k8s-web"]);
    expect(restricted.HostConfig.GroupAdd).toEqual(["2000", "3000"]);
    expect(restricted.HostConfig.PidMode).toBe("container:pause-id");
    expect(
      body(pod(), { ...app, securityContext: { seccompProfile: { type: "Unconfined" } } }).HostConfig.SecurityOpt,
    ).toEqual(["seccomp=unconfined"]);
    const audited = {
      ...app,
      securityContext: { seccompProfile: { type: "Localhost", localhostProfile: "audit.json" } },
    };
    const config = containerConfig(p, audited, { ...ctx, attempt: 2, init: false });
    expect(config.linux?.security_context?.seccomp).toEqual({
      profile_type: "Localhost",
      localhost_ref: "/var/lib/kubelet/seccomp/audit.json",
    });
    const local = containerBody("pause-id", config, podSandboxConfig(p, ctx, 0), '{"defaultAction":"SCMP_ACT_LOG"}');
    expect(local.HostConfig.SecurityOpt).toEqual(['seccomp={"defaultAction":"SCMP_ACT_LOG"}']);
    expect(buildPauseContainer(p, ctx).HostConfig.Sysctls).toEqual({ "kernel.shm_rmid_forced": "1" });
  });

  test("volume mounts become binds (prepared subPath, read-only, propagation); a volume not set up is an error naming it", () => {
    const mounted = body(
      pod(),
      {
        ...app,
        volumeMounts: [
          { name: "data", mountPath: "/data", mountPropagation: "HostToContainer" },
          { name: "data", mountPath: "/logs", subPath: "logs/app", readOnly: true },
        ],
      },
      { subPaths: new Map([["/logs", "/var/lib/kubelet/pods/u/volumes/data/logs/app"]]) },
    );
    expect(mounted.HostConfig.Binds).toEqual([
      "/var/lib/kubelet/pods/u/volumes/data:/data:rslave",
      "/var/lib/kubelet/pods/u/volumes/data/logs/app:/logs:ro",
    ]);
    expect(() =>
      body(pod(), { ...app, volumeMounts: [{ name: "data", mountPath: "/d", mountPropagation: "Bidirectional" }] }),
    ).toThrow("Bidirectional mount propagation is available only to privileged containers");
    expect(() => body(pod(), { ...app, volumeMounts: [{ name: "nope", mountPath: "/x" }] })).toThrow(
      'container app: volume "nope" was not set up',
    );
  });

  test("containerLogMaxSize and containerLogMaxFiles become the json-file driver's max-size and max-file", () => {
    const p = pod();
    const config = containerConfig(p, p.spec.containers[0]!, { ...ctx, attempt: 0, init: false });
    const logs = (logMaxSizeBytes: number, logMaxFiles: number) =>
      containerBody("pause-id", config, podSandboxConfig(p, ctx, 0), undefined, { logMaxSizeBytes, logMaxFiles })
        .HostConfig.LogConfig;
    expect(logs(5 * 2 ** 20, 3)).toEqual({ Type: "json-file", Config: { "max-size": "5m", "max-file": "3" } });
    expect(logs(2 ** 30, 2)?.Config?.["max-size"]).toBe("1g");
    expect(logs(1000, 2)?.Config?.["max-size"]).toBe("1000");
  });

  test("working directory, TTY, stdin, host PID", () => {
    const b = body(pod({ hostPID: true }), { ...app, workingDir: "/srv", tty: true, stdin: true, stdinOnce: true });
    expect([b.WorkingDir, b.Tty, b.OpenStdin, b.StdinOnce, b.HostConfig.PidMode]).toEqual([
      "/srv",
      true,
      true,
      true,
      "host",
    ]);
    expect(body(pod(), { ...app, stdin: true }).StdinOnce).toBe(false);
  });

  test("node settings: the pod cgroup as parent, the pod's resolv.conf unless it mounts its own, CFS quota and its period", () => {
    const node = { cgroupParent: "/kubepods/pod-u", resolvConfPath: "/var/lib/kubelet/pods/u/resolv.conf" };
    const b = body(
      pod(),
      { ...app, resources: { limits: { cpu: "500m", memory: "64Mi" } } },
      { ...node, cfsPeriodUs: 50_000 },
    );
    expect(b.HostConfig).toMatchObject({
      CgroupParent: "/kubepods/pod-u",
      Binds: ["/var/lib/kubelet/pods/u/resolv.conf:/etc/resolv.conf:ro"],
      CpuQuota: 25_000,
      CpuPeriod: 50_000,
    });
    expect(buildPauseContainer(pod(), { ...ctx, ...node }).HostConfig.CgroupParent).toBe("/kubepods/pod-u");
    const ownResolv = body(pod(), { ...app, volumeMounts: [{ name: "data", mountPath: "/etc/resolv.conf" }] }, node);
    expect(ownResolv.HostConfig.Binds).toEqual(["/var/lib/kubelet/pods/u/volumes/data:/etc/resolv.conf"]);
    const noQuota = body(pod(), { ...app, resources: { limits: { cpu: "1" } } }, { cfsQuota: false });
    expect([noQuota.HostConfig.CpuQuota, noQuota.HostConfig.CpuPeriod, noQuota.HostConfig.CgroupParent]).toEqual([
      undefined,
      undefined,
      undefined,
    ]);
    expect(body(pod(), app, { oomScoreAdjMin: 0 }).HostConfig.OomScoreAdj).toBe(1000);
    expect(buildPauseContainer(pod(), { ...ctx, oomScoreAdjMin: 0 }).HostConfig.OomScoreAdj).toBe(0);
  });
});

describe("CRI configs with only the required fields", () => {
  const metadata = { name: "web", namespace: "default", uid: "u-1", attempt: 0 };
  const logConfig = { Type: "json-file", Config: { "max-size": "10m", "max-file": "5" } };
  const shim = { podInfraImage: "pause", podNetworkMode: "bridge" };
  const bare = { metadata: { name: "app", attempt: 0 }, image: { image: "busybox" } };

  test("a sandbox with nothing but metadata (and perhaps its cgroup) is a pause container on the pod network, with only the defaults", () => {
    expect(sandboxBody({ metadata }, shim)).toStrictEqual({
      name: "k8s_POD_web_default_u-1_0",
      Image: "pause",
      Labels: { [LABEL.containerType]: "podsandbox" },
      HostConfig: { NetworkMode: "bridge", IpcMode: "shareable", LogConfig: logConfig },
    });
    const parented = sandboxBody({ metadata, linux: { cgroup_parent: "/kubepods/pod-u" } }, shim);
    expect(parented.HostConfig).toStrictEqual({
      NetworkMode: "bridge",
      IpcMode: "shareable",
      CgroupParent: "/kubepods/pod-u",
      LogConfig: logConfig,
    });
  });

  test("a port mapping without protocol or host IP is published as TCP on every address", () => {
    const pause = sandboxBody({ metadata, port_mappings: [{ container_port: 80, host_port: 8080 }] }, shim);
    expect(pause.ExposedPorts).toEqual({ "80/tcp": {} });
    expect(pause.HostConfig.PortBindings).toEqual({ "80/tcp": [{ HostIp: "", HostPort: "8080" }] });
  });

  test("a container with nothing but name and image joins the sandbox with no other settings", () => {
    expect(containerBody("pause-id", bare, { metadata })).toStrictEqual({
      name: "k8s_app_web_default_u-1_0",
      Image: "busybox",
      Env: [],
      Labels: { [LABEL.containerType]: "container" },
      HostConfig: { NetworkMode: "container:pause-id", IpcMode: "container:pause-id", Binds: [], LogConfig: logConfig },
    });
  });

  test("stdin without stdin_once leaves the stdin open after the first attach", () => {
    expect(containerBody("pause-id", { ...bare, stdin: true }, { metadata })).toMatchObject({
      OpenStdin: true,
      StdinOnce: false,
    });
  });

  test("an Unconfined AppArmor profile becomes apparmor=unconfined", () => {
    const unconfined = { ...bare, linux: { security_context: { apparmor: { profile_type: "Unconfined" as const } } } };
    expect(securityOpts(unconfined)).toEqual(["apparmor=unconfined"]);
  });

  test("binds: read-only and HostToContainer as ro,rslave; Bidirectional as rshared; none as host:container", () => {
    const mounts = [
      { host_path: "/a", container_path: "/a", readonly: true, propagation: "PROPAGATION_HOST_TO_CONTAINER" as const },
      { host_path: "/b", container_path: "/b", propagation: "PROPAGATION_BIDIRECTIONAL" as const },
      { host_path: "/c", container_path: "/c" },
    ];
    expect(containerBody("pause-id", { ...bare, mounts }, { metadata }).HostConfig.Binds).toEqual([
      "/a:/a:ro,rslave",
      "/b:/b:rshared",
      "/c:/c",
    ]);
  });
});

describe("a container with device plugin resources", () => {
  test("gets HostConfig.Devices, a cdi DeviceRequest and its annotations as annotation.<key> labels", () => {
    const b = body(pod(), app, {
      devices: {
        envs: [{ key: "WIDGET_IDS", value: "w0" }],
        mounts: [{ container_path: "/run/widget", host_path: "/var/lib/widget", readonly: true }],
        devices: [{ container_path: "/dev/w0", host_path: "/dev/null", permissions: "rw" }],
        annotations: { "example.com/widget": "w0" },
        cdiDevices: ["example.com/widget=w0"],
      },
    });
    expect(b.HostConfig.Devices).toEqual([
      { PathOnHost: "/dev/null", PathInContainer: "/dev/w0", CgroupPermissions: "rw" },
    ]);
    expect(b.HostConfig.DeviceRequests).toEqual([{ Driver: "cdi", DeviceIDs: ["example.com/widget=w0"] }]);
    expect(b.HostConfig.Binds?.[0]).toBe("/var/lib/widget:/run/widget:ro");
    expect(b.Env).toContain("WIDGET_IDS=w0");
    expect(b.Labels["annotation.example.com/widget"]).toBe("w0");
  });

  test("a container without them has no Devices or DeviceRequests", () => {
    const b = body(pod());
    expect([b.HostConfig.Devices, b.HostConfig.DeviceRequests]).toEqual([undefined, undefined]);
  });
});
