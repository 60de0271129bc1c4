// ConfigMaps and Secrets beside static pods, and gRPC probes: the compiled binary against the real
// dockerd — files and modes in the container, live updates without a restart, Secrets kept out of
// every output, a missing ConfigMap that appears later, and gRPC liveness and readiness.
import { afterAll, beforeAll, expect } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { startHealthServer, type HealthServer } from "../../lib/testing/grpc-health.ts";
import { describeWithServices } from "../../lib/testing/services.ts";
import { type Kubelet, killKubeletsAfterAll, startKubelet, test, waitFor } from "./harness-kubelet.ts";
import { baseFlags, docker, freePort, podContainers, removeDir, removePods, runBinary, tempDir } from "./harness.ts";

const SECRET = "s3cr3t-e2e-value";

const configMap = (mode: string) => `apiVersion: v1
kind: ConfigMap
metadata: { name: app-config }
data:
  mode: ${mode}
  app.properties: "greeting=hello"
`;

const secret = `apiVersion: v1
kind: Secret
metadata: { name: app-secret }
stringData:
  token: ${SECRET}
`;

interface PodList {
  items: Array<{
    metadata: { name: string };
    status?: {
      conditions?: Array<{ type: string; status: string }>;
      containerStatuses?: Array<{
        name: string;
        restartCount: number;
        ready: boolean;
        state: { waiting?: { reason: string; message: string }; running?: object };
      }>;
    };
  }>;
}

describeWithServices("ConfigMaps, Secrets and gRPC probes on the real Docker Engine", (services) => {
  const manifests = tempDir("configs-manifests");
  const rootDir = tempDir("configs-root");
  const pods = ["e2e-cfg", "e2e-cfg-wait", "e2e-grpc"];
  let kubelet: Kubelet;
  let health: HealthServer;
  const api = async (path: string) => (await kubelet.api(path)).text();
  const podStatus = async (name: string) =>
    ((JSON.parse(await api("/pods")) as PodList).items.find((p) => p.metadata.name === name)?.status ??
      {}) as NonNullable<PodList["items"][0]["status"]>;
  const running = (pod: string, name = "app") =>
    podContainers(services, pod).find(
      (c) => c.labels["io.kubernetes.container.name"] === name && c.state === "running",
    );
  const exec = (id: string, script: string) => docker(services, "exec", id, "sh", "-c", script);

  beforeAll(async () => {
    health = await startHealthServer(await freePort());
    health.set("SERVING", "ready");
    writeFileSync(join(manifests, "config.yaml"), configMap("fast"));
    writeFileSync(join(manifests, "secret.yaml"), secret);
    writeFileSync(
      join(manifests, "cfg.yaml"),
      `apiVersion: v1
kind: Pod
metadata: { name: e2e-cfg, labels: { app: cfg } }
spec:
  terminationGracePeriodSeconds: 1
  containers:
    - name: app
      image: ${services.busybox}
      command: ["sleep", "3600"]
      envFrom: [{ prefix: CFG_, configMapRef: { name: app-config } }]
      env: [{ name: TOKEN, valueFrom: { secretKeyRef: { name: app-secret, key: token } } }]
      volumeMounts:
        - { name: config, mountPath: /etc/config }
        - { name: secret, mountPath: /etc/secret }
        - { name: all, mountPath: /etc/all }
  volumes:
    - { name: config, configMap: { name: app-config } }
    - { name: secret, secret: { secretName: app-secret } }
    - name: all
      projected:
        sources:
          - configMap: { name: app-config, items: [{ key: mode, path: conf/mode, mode: 0600 }] }
          - secret: { name: app-secret }
          - downwardAPI: { items: [{ path: labels, fieldRef: { fieldPath: metadata.labels } }] }
`,
    );
    writeFileSync(
      join(manifests, "grpc.yaml"),
      `apiVersion: v1
kind: Pod
metadata: { name: e2e-grpc }
spec:
  hostNetwork: true
  terminationGracePeriodSeconds: 1
  containers:
    - name: app
      image: ${services.busybox}
      command: ["sleep", "3600"]
      livenessProbe: { grpc: { port: ${health.port} }, periodSeconds: 1, failureThreshold: 2 }
      readinessProbe: { grpc: { port: ${health.port}, service: ready }, periodSeconds: 1, failureThreshold: 1 }
`,
    );
    kubelet = await startKubelet(["run", "-c", manifests, ...baseFlags(services, rootDir), "--sync_frequency", "2s"]);
  });

  killKubeletsAfterAll();
  afterAll(async () => {
    await health?.stop();
    removePods(services, ...pods);
    removeDir(manifests);
    removeDir(rootDir);
  });

  test("configMap, secret, envFrom and projected volumes reach the container with the right files and modes", async () => {
    const app = await waitFor("the config pod to run", () => running("e2e-cfg"), 60_000);
    expect(exec(app.id, "cat /etc/config/mode; echo; cat /etc/config/app.properties")).toBe("fast\ngreeting=hello");
    const mode = (path: string) => exec(app.id, `ls -lL ${path} | cut -c1-10`);
    expect(mode("/etc/config/mode")).toBe("-rw-r--r--");
    expect(mode("/etc/secret/token")).toBe("-r--------");
    expect(mode("/etc/all/conf/mode")).toBe("-rw-------");
    expect(exec(app.id, "cat /etc/secret/token")).toBe(SECRET);
    expect(exec(app.id, "cat /etc/all/token; echo; cat /etc/all/conf/mode; echo; cat /etc/all/labels")).toBe(
      `${SECRET}\nfast\napp="cfg"`,
    );
    expect(exec(app.id, "readlink /etc/config/..data")).toMatch(/^\.\.\d{4}_\d\d_\d\d_/);
    const env = JSON.parse(docker(services, "inspect", app.id))[0].Config.Env as string[];
    expect(env).toEqual(
      expect.arrayContaining(["CFG_mode=fast", "CFG_app.properties=greeting=hello", `TOKEN=${SECRET}`]),
    );
    // Secret files live on a tmpfs on the host, never on its disk.
    const mounts = readFileSync("/proc/self/mounts", "utf8").split("\n");
    expect(
      mounts.some(
        (m) => m.startsWith("tmpfs ") && m.includes(`${rootDir}/pods/`) && m.includes("kubernetes.io~secret/secret"),
      ),
    ).toBe(true);
  }, 90_000);

  test("editing the ConfigMap updates the mounted file within 5 s and the container is not restarted", async () => {
    const app = await waitFor("the config pod to run", () => running("e2e-cfg"), 60_000);
    writeFileSync(join(manifests, "config.yaml"), configMap("slow"));
    const edited = Date.now();
    await waitFor("the new value in the container", () => exec(app.id, "cat /etc/config/mode") === "slow", 5_000);
    expect(Date.now() - edited).toBeLessThan(5_000);
    await waitFor("the projected copy", () => exec(app.id, "cat /etc/all/conf/mode") === "slow", 5_000);
    expect(running("e2e-cfg")!.id).toBe(app.id);
    expect(
      podContainers(services, "e2e-cfg").filter((c) => c.labels["io.kubernetes.container.name"] === "app"),
    ).toHaveLength(1);
  }, 90_000);

  test("a missing ConfigMap gives CreateContainerConfigError; the pod starts by itself once it is added", async () => {
    writeFileSync(
      join(manifests, "wait.yaml"),
      `apiVersion: v1
kind: Pod
metadata: { name: e2e-cfg-wait }
spec:
  terminationGracePeriodSeconds: 1
  containers:
    - name: app
      image: ${services.busybox}
      command: ["sleep", "3600"]
      env: [{ name: LATE, valueFrom: { configMapKeyRef: { name: late-config, key: value } } }]
`,
    );
    const waiting = await waitFor(
      "CreateContainerConfigError",
      async () => (await podStatus("e2e-cfg-wait")).containerStatuses?.[0]?.state.waiting,
      60_000,
    );
    expect(waiting).toEqual({ reason: "CreateContainerConfigError", message: 'configmap "late-config" not found' });
    writeFileSync(
      join(manifests, "late.yaml"),
      "apiVersion: v1\nkind: ConfigMap\nmetadata: { name: late-config }\ndata: { value: arrived }\n",
    );
    const app = await waitFor("the pod to start", () => running("e2e-cfg-wait"), 30_000);
    expect(JSON.parse(docker(services, "inspect", app.id))[0].Config.Env).toContain("LATE=arrived");
  }, 120_000);

  test("the Secret's value appears nowhere in /pods, /events, the kubelet's logs or print-config", async () => {
    await waitFor("the config pod to run", () => running("e2e-cfg"), 60_000);
    for (const path of ["/pods", "/events", "/pods/default/e2e-cfg"]) expect(await api(path)).not.toContain(SECRET);
    expect(kubelet.output).not.toContain(SECRET);
    const printed = runBinary(["print-config", "-c", manifests, "-o", "json"]);
    expect(printed.code).toBe(0);
    expect(printed.stdout + printed.stderr).not.toContain(SECRET);
  }, 90_000);

  test("gRPC liveness and readiness probes pass, fail and restart the container", async () => {
    const ready = await waitFor(
      "the gRPC pod to be ready",
      async () => {
        const status = (await podStatus("e2e-grpc")).containerStatuses?.[0];
        return status?.ready === true ? status : undefined;
      },
      60_000,
    );
    health.set("NOT_SERVING", "ready");
    await waitFor(
      "readiness to fail",
      async () => (await podStatus("e2e-grpc")).conditions?.find((c) => c.type === "Ready")?.status === "False",
      15_000,
    );
    // A failing readiness probe restarts nothing (counted from when the pod was ready: this test's health server
    // shares a loaded machine, and a liveness probe it answered late before that may have restarted the container).
    expect((await podStatus("e2e-grpc")).containerStatuses?.[0]?.restartCount).toBe(ready.restartCount);
    health.set("NOT_SERVING");
    await waitFor(
      "a restart after the liveness failures",
      () =>
        podContainers(services, "e2e-grpc").some(
          (c) =>
            c.labels["io.kubernetes.container.restartCount"] === String(ready.restartCount + 1) &&
            c.state === "running",
        ),
      30_000,
    );
    expect(await api("/events")).toContain(
      'Liveness probe failed: service unhealthy (responded with \\"NOT_SERVING\\")',
    );
    expect(health.asked).toEqual(expect.arrayContaining(["", "ready"]));
  }, 120_000);
});
