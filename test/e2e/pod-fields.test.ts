// Pod fields the Go kubelet implements, end to end on each runtime of the matrix, read from inside the pod
// through exec: a PSS-restricted pod's /proc/self/status (seccomp filter, no_new_privs, no capabilities, its
// user), runAsNonRoot against a root image, a Localhost seccomp profile, safe and unsafe sysctls, fsGroup on
// an emptyDir, a shared PID namespace, runtimeClassName as the runtime handler, activeDeadlineSeconds,
// hostAliases in the managed /etc/hosts, dnsConfig in resolv.conf, nodeSelector against --node_labels,
// subPathExpr, mountPropagation from a shared host mount, overhead in the resource fit, refusals of what the
// node lacks, and --seccomp_default.
import { afterAll, beforeAll, expect } from "bun:test";
import { execFileSync, spawnSync } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type Kubelet, startKubelet, test } from "./harness-kubelet.ts";
import { describeOnRuntimes, type RuntimeUnderTest } from "./harness-runtimes.ts";
import type { TestServices } from "../../lib/testing/services.ts";
import { removeDir, tempDir, writePodManifest } from "./harness.ts";

interface PodItem {
  metadata: { name: string; uid: string };
  status?: {
    phase?: string;
    reason?: string;
    message?: string;
    containerStatuses?: Array<{ name: string; state?: { waiting?: { reason: string; message?: string } } }>;
  };
}

const PODS = [
  "e2e-propagation",
  "e2e-no-propagation",
  "e2e-restricted",
  "e2e-nonroot-root",
  "e2e-seccomp-local",
  "e2e-sysctl",
  "e2e-sysctl-unsafe",
  "e2e-fsgroup",
  "e2e-sharepid",
  "e2e-rc-mapped",
  "e2e-rc-unknown",
  "e2e-deadline",
  "e2e-names",
  "e2e-names-hostnet",
  "e2e-selector-miss",
  "e2e-selector-match",
  "e2e-subpath",
  "e2e-overhead",
  "e2e-apparmor",
  "e2e-userns",
  "e2e-selinux",
];

/** A kubelet running the pods of `manifests` on the runtime under test, with `extra` flags. */
const startOn = (
  services: TestServices,
  rt: RuntimeUnderTest,
  manifests: string,
  rootDir: string,
  ...extra: string[]
): Promise<Kubelet> =>
  startKubelet(["run", "-c", manifests, ...rt.flags(rootDir), "--network_container_image", services.pause, ...extra]);

/** Whether this host enforces AppArmor: a pod asking for a profile runs with it, or is refused where it does not. */
const HOST_APPARMOR = (() => {
  try {
    return readFileSync("/sys/module/apparmor/parameters/enabled", "utf8").startsWith("Y");
  } catch {
    return false;
  }
})();

describeOnRuntimes("pod fields", (services, rt) => {
  const manifests = tempDir("fields-manifests");
  const rootDir = tempDir("fields-root");
  const shared = join(rootDir, "shared");
  let kubelet: Kubelet;
  const pod = (name: string, spec: string) => writePodManifest(manifests, name, spec);
  const app = (extra = "") => `  containers:
    - name: app
      image: ${services.busybox}
      command: ["sleep", "3600"]
${extra}`;
  const reported = async (name: string) =>
    ((await (await kubelet.api("/pods")).json()) as { items: PodItem[] }).items.find((p) => p.metadata.name === name);
  /** Runs `script` in the pod's running app container. */
  const exec = async (name: string, script: string) => {
    const c = await kubelet.waitFor(`${name} running`, () => rt.running(name, "app"), 60_000);
    return rt.runtime.exec(c.id, ["sh", "-c", script], { timeoutMs: 10_000 });
  };
  /** The pod's status once it carries `reason` (a rejection or an end). */
  const endedWith = (name: string, reason: string) =>
    kubelet.waitFor(`${name} with reason ${reason}`, async () => {
      const p = await reported(name);
      return p?.status?.reason === reason ? p.status : undefined;
    });
  const status = async (name: string) => (await exec(name, "cat /proc/self/status")).stdout;
  const line = (text: string, key: string) => new RegExp(`^${key}:\\s*(.*)$`, "m").exec(text)?.[1]?.trim();

  beforeAll(async () => {
    mkdirSync(join(rootDir, "seccomp", "profiles"), { recursive: true });
    // Every call allowed but mkdir/mkdirat, which fail with EPERM: a profile whose effect shows.
    writeFileSync(
      join(rootDir, "seccomp", "profiles", "no-mkdir.json"),
      JSON.stringify({
        defaultAction: "SCMP_ACT_ALLOW",
        syscalls: [{ names: ["mkdir", "mkdirat"], action: "SCMP_ACT_ERRNO", errnoRet: 1 }],
      }),
    );
    pod(
      "e2e-restricted",
      `  securityContext:
    runAsNonRoot: true
    runAsUser: 1000
    runAsGroup: 3000
    seccompProfile: { type: RuntimeDefault }
${app(`      securityContext:
        allowPrivilegeEscalation: false
        capabilities: { drop: [ALL] }
`)}`,
    );
    pod("e2e-nonroot-root", `  securityContext: { runAsNonRoot: true }\n${app()}`);
    pod(
      "e2e-seccomp-local",
      app(`      securityContext:
        seccompProfile: { type: Localhost, localhostProfile: profiles/no-mkdir.json }
`),
    );
    pod("e2e-sysctl", `  securityContext: { sysctls: [{ name: kernel.shm_rmid_forced, value: "1" }] }\n${app()}`);
    pod("e2e-sysctl-unsafe", `  securityContext: { sysctls: [{ name: kernel.msgmax, value: "65536" }] }\n${app()}`);
    pod(
      "e2e-fsgroup",
      `  securityContext: { runAsUser: 1000, fsGroup: 2000 }
  volumes: [{ name: data, emptyDir: {} }]
${app("      volumeMounts: [{ name: data, mountPath: /data }]\n")}`,
    );
    pod("e2e-sharepid", `  shareProcessNamespace: true\n${app()}`);
    pod(
      "e2e-names",
      `  hostname: web
  subdomain: backends
  setHostnameAsFQDN: true
  hostAliases: [{ ip: 10.1.2.3, hostnames: [db.internal, cache.internal] }]
  dnsPolicy: None
  dnsConfig:
    nameservers: [10.9.9.9]
    searches: [corp.example]
    options: [{ name: ndots, value: "2" }, { name: edns0 }]
${app()}`,
    );
    pod(
      "e2e-names-hostnet",
      `  hostNetwork: true
  hostAliases: [{ ip: 10.1.2.4, hostnames: [registry.internal] }]
${app()}`,
    );
    // A tiny request, but an overhead no node here has: refused by the resource fit.
    pod(
      "e2e-overhead",
      `  overhead: { cpu: "1000" }
${app("      resources: { requests: { cpu: 10m } }\n")}`,
    );
    pod("e2e-apparmor", `  securityContext: { appArmorProfile: { type: RuntimeDefault } }\n${app()}`);
    pod("e2e-userns", `  hostUsers: false\n${app()}`);
    pod("e2e-selinux", `  securityContext: { seLinuxOptions: { level: "s0:c123,c456" } }\n${app()}`);
    pod("e2e-selector-miss", `  nodeSelector: { disktype: ssd }\n${app()}`);
    pod(
      "e2e-selector-match",
      `  nodeSelector: { disktype: hdd, kubernetes.io/os: linux }
  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms: [{ matchExpressions: [{ key: kubernetes.io/hostname, operator: Exists }] }]
${app()}`,
    );
    pod(
      "e2e-subpath",
      `  volumes: [{ name: data, emptyDir: {} }]
${app(`      env: [{ name: POD_NAME, valueFrom: { fieldRef: { fieldPath: metadata.name } } }]
      volumeMounts:
        - { name: data, mountPath: /data }
        - { name: data, mountPath: /mine, subPathExpr: "logs/$(POD_NAME)" }
`)}`,
    );
    // A shared mount on the host, as the Go kubelet makes its root dir rshared: HostToContainer needs one.
    mkdirSync(shared, { recursive: true });
    execFileSync("mount", ["--bind", shared, shared]);
    execFileSync("mount", ["--make-shared", shared]);
    for (const [name, propagation] of [
      ["e2e-propagation", "HostToContainer"],
      ["e2e-no-propagation", "None"],
    ])
      pod(
        name!,
        `  volumes: [{ name: host, hostPath: { path: ${shared} } }]
${app(`      volumeMounts: [{ name: host, mountPath: /host, mountPropagation: ${propagation} }]\n`)}`,
      );
    pod("e2e-rc-mapped", `  runtimeClassName: fast\n${app()}`);
    pod("e2e-rc-unknown", `  runtimeClassName: kata\n${app()}`);
    kubelet = await startOn(
      services,
      rt,
      manifests,
      rootDir,
      "--runtime_handlers",
      "fast=runc",
      "--node_labels",
      "disktype=hdd",
    );
  });
  afterAll(async () => {
    await kubelet?.stop("SIGKILL");
    await rt.removePods(...PODS);
    spawnSync("umount", [join(shared, "later")]);
    spawnSync("umount", [shared]);
    removeDir(manifests);
    removeDir(rootDir);
  });

  test("a PSS-restricted pod runs with a seccomp filter, no_new_privs, no capabilities and its own user", async () => {
    const text = await status("e2e-restricted");
    expect(line(text, "Seccomp")).toBe("2");
    expect(line(text, "NoNewPrivs")).toBe("1");
    expect(line(text, "CapEff")).toBe("0000000000000000");
    expect(line(text, "Uid")?.split(/\s+/)).toEqual(["1000", "1000", "1000", "1000"]);
    expect(line(text, "Gid")?.split(/\s+/)[0]).toBe("3000");
  });

  test("runAsNonRoot with an image that runs as root is CreateContainerConfigError and never runs", async () => {
    const waiting = await kubelet.waitFor("e2e-nonroot-root refused", async () => {
      const p = await reported("e2e-nonroot-root");
      const w = p?.status?.containerStatuses?.[0]?.state?.waiting;
      return w?.reason === "CreateContainerConfigError" ? { uid: p!.metadata.uid, message: w.message } : undefined;
    });
    expect(waiting.message).toBe(
      `container has runAsNonRoot and image will run as root (pod: "e2e-nonroot-root_default(${waiting.uid})", container: app)`,
    );
    expect((await rt.podContainers("e2e-nonroot-root")).length).toBe(0);
  });

  test("a Localhost seccomp profile under the kubelet's seccomp root is applied", async () => {
    const result = await exec("e2e-seccomp-local", "mkdir /tmp/denied; echo $?; grep ^Seccomp: /proc/self/status");
    expect(result.stdout).toMatch(/^1\nSeccomp:\s+2\n$/);
    expect(result.stderr).toMatch(/Operation not permitted/);
  });

  test("a pod without a seccomp profile runs unconfined (seccompDefault off)", async () => {
    expect(line(await status("e2e-sysctl"), "Seccomp")).toBe("0");
  });

  test("a safe sysctl is set inside the pod", async () => {
    expect((await exec("e2e-sysctl", "cat /proc/sys/kernel/shm_rmid_forced")).stdout.trim()).toBe("1");
  });

  test("an unsafe sysctl not in --allowed_unsafe_sysctls is refused: the pod is Failed with SysctlForbidden", async () => {
    expect(await endedWith("e2e-sysctl-unsafe", "SysctlForbidden")).toMatchObject({
      phase: "Failed",
      message: 'Pod was rejected: forbidden sysctl: "kernel.msgmax" not allowlisted',
    });
    expect((await rt.podSandboxes("e2e-sysctl-unsafe")).length).toBe(0);
  });

  test("fsGroup owns an emptyDir and is one of the container's groups", async () => {
    const result = await exec(
      "e2e-fsgroup",
      "stat -c '%g %A' /data; id -G; touch /data/written && stat -c %g /data/written",
    );
    const [owner, groups, written] = result.stdout.trim().split("\n");
    expect(owner).toMatch(/^2000 drwxrws/);
    expect(groups?.split(" ")).toContain("2000");
    expect(written).toBe("2000");
  });

  test("shareProcessNamespace shows the sandbox's pause process to the pod's containers", async () => {
    const result = await exec("e2e-sharepid", "cat /proc/1/cmdline | tr '\\0' ' '");
    expect(result.stdout).toMatch(/pause/);
  });

  test("runtimeClassName reaches the runtime as its handler: a mapped class runs, an unknown handler is the runtime's error on the pod", async () => {
    await kubelet.waitFor("e2e-rc-mapped running", () => rt.running("e2e-rc-mapped", "app"), 60_000);
    const failed = await kubelet.waitFor("e2e-rc-unknown refused", async () => {
      const events = (await (await kubelet.api("/events")).json()) as {
        items: Array<{ reason: string; message: string; involvedObject: { name: string } }>;
      };
      return events.items.find(
        (e) => e.involvedObject.name === "e2e-rc-unknown" && e.reason === "FailedCreatePodSandBox",
      );
    });
    expect(failed.message).toMatch(
      rt.kind === "docker" ? /RuntimeHandler "kata" not supported/ : /no runtime for "kata" is configured/,
    );
    expect(await rt.readySandbox("e2e-rc-unknown")).toBeUndefined();
  });

  test("activeDeadlineSeconds ends a running pod: Failed with DeadlineExceeded, its containers stopped", async () => {
    // Written now, not with the others: its deadline runs from when the kubelet first sees it, with room to start.
    pod("e2e-deadline", `  activeDeadlineSeconds: 15\n${app()}`);
    await kubelet.waitFor("e2e-deadline running", () => rt.running("e2e-deadline", "app"), 15_000);
    expect(await endedWith("e2e-deadline", "DeadlineExceeded")).toMatchObject({
      phase: "Failed",
      message: "Pod was active on the node longer than the specified deadline",
    });
    await kubelet.waitFor("e2e-deadline's container stopped", async () => !(await rt.running("e2e-deadline", "app")));
  });

  test("hostAliases are in a kubelet-managed /etc/hosts; a host-network pod's is the node's file plus its aliases", async () => {
    expect((await exec("e2e-names", "cat /etc/hosts")).stdout).toStartWith(
      "# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n",
    );
    expect((await exec("e2e-names", "cat /etc/hosts")).stdout).toEndWith(
      "\n# Entries added by HostAliases.\n10.1.2.3\tdb.internal\tcache.internal\n",
    );
    const hostNet = (await exec("e2e-names-hostnet", "cat /etc/hosts")).stdout;
    expect(hostNet).toStartWith(
      `# Kubernetes-managed hosts file (host network).\n${readFileSync("/etc/hosts", "utf8")}`,
    );
    expect(hostNet).toEndWith("\n# Entries added by HostAliases.\n10.1.2.4\tregistry.internal\n");
  });

  test("dnsConfig under dnsPolicy None is the pod's resolv.conf", async () => {
    expect((await exec("e2e-names", "cat /etc/resolv.conf")).stdout).toBe(
      "nameserver 10.9.9.9\nsearch corp.example\noptions ndots:2 edns0\n",
    );
  });

  test("a nodeSelector the node's labels do not match is rejected as NodeAffinity; a matching one runs", async () => {
    expect(await endedWith("e2e-selector-miss", "NodeAffinity")).toMatchObject({
      phase: "Failed",
      message: "Pod was rejected: Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector",
    });
    await kubelet.waitFor("e2e-selector-match running", () => rt.running("e2e-selector-match", "app"), 60_000);
    expect((await rt.podSandboxes("e2e-selector-miss")).length).toBe(0);
  });

  test("subPathExpr expands from the container's environment into a directory of the volume", async () => {
    const result = await exec("e2e-subpath", "echo hi > /mine/file && cat /data/logs/e2e-subpath/file");
    expect(result.stdout).toBe("hi\n");
  });

  test("mountPropagation HostToContainer shows a mount the host makes later under the volume; None does not", async () => {
    await exec("e2e-propagation", "true");
    await exec("e2e-no-propagation", "true");
    mkdirSync(join(shared, "later"), { recursive: true });
    execFileSync("mount", ["-t", "tmpfs", "-o", "size=1m", "tmpfs", join(shared, "later")]);
    const seen = async (name: string) => (await exec(name, "grep -c ' /host/later ' /proc/mounts")).stdout.trim();
    expect({ HostToContainer: await seen("e2e-propagation"), None: await seen("e2e-no-propagation") }).toEqual({
      HostToContainer: "1",
      None: "0",
    });
  });

  test("overhead counts in the resource fit: a pod whose overhead does not fit is rejected OutOfcpu", async () => {
    const status = await endedWith("e2e-overhead", "OutOfcpu");
    expect(status.phase).toBe("Failed");
    expect(status.message).toMatch(
      /^Pod was rejected: Node didn't have enough resource: cpu, requested: 1000010, used: \d+, capacity: \d+$/,
    );
  });

  test("security features the node lacks are refused with a reason, never dropped: hostUsers: false, seLinuxOptions, AppArmor without AppArmor", async () => {
    expect((await endedWith("e2e-userns", "UserNamespacesUnsupported")).phase).toBe("Failed");
    expect((await endedWith("e2e-selinux", "SELinuxUnsupported")).phase).toBe("Failed");
    if (HOST_APPARMOR) {
      const profile = await exec("e2e-apparmor", "cat /proc/self/attr/current");
      expect(profile.stdout).not.toMatch(/^unconfined/);
    } else
      expect(await endedWith("e2e-apparmor", "AppArmor")).toMatchObject({
        phase: "Failed",
        message: "Pod was rejected: Cannot enforce AppArmor: AppArmor is not enabled on the host",
      });
  });
});

describeOnRuntimes("--seccomp_default", (services, rt) => {
  const manifests = tempDir("seccomp-default-manifests");
  const rootDir = tempDir("seccomp-default-root");
  let kubelet: Kubelet;

  beforeAll(async () => {
    writePodManifest(
      manifests,
      "e2e-seccomp-default",
      `  containers: [{ name: app, image: "${services.busybox}", command: ["sleep", "3600"] }]\n`,
    );
    kubelet = await startOn(services, rt, manifests, rootDir, "--seccomp_default");
  });
  afterAll(async () => {
    await kubelet?.stop("SIGKILL");
    await rt.removePods("e2e-seccomp-default");
    removeDir(manifests);
    removeDir(rootDir);
  });

  test("a pod naming no seccomp profile runs with the runtime's default one", async () => {
    const c = await kubelet.waitFor(
      "e2e-seccomp-default running",
      () => rt.running("e2e-seccomp-default", "app"),
      60_000,
    );
    const result = await rt.runtime.exec(c.id, ["grep", "^Seccomp:", "/proc/self/status"], { timeoutMs: 10_000 });
    expect(result.stdout).toMatch(/^Seccomp:\s+2\n$/);
  });
});
