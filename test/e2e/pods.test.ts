// What the kubelet makes of a pod spec on the real dockerd: env and $(VAR) rules, mounts, limits,
// liveness restarts, pulls through the registry with QPS limiting, and a registry outage.
import { afterAll, expect, test } from "bun:test";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describeWithServices } from "../../lib/testing/services.ts";
import {
  baseFlags,
  docker,
  freePort,
  KubeletProcess,
  podContainers,
  removeDir,
  removePods,
  runBinary,
  tempDir,
  waitFor,
} from "./harness.ts";

describeWithServices("pods on the real Docker Engine", (services) => {
  const rootDir = tempDir("pods-root");
  const hostDir = tempDir("pods-host");
  const pods = ["e2e-spec", "e2e-live", "e2e-hooks", "e2e-qps-0", "e2e-qps-1", "e2e-qps-2", "e2e-outage"];
  afterAll(() => {
    removePods(services, ...pods);
    removeDir(rootDir);
    removeDir(hostDir);
  });
  const inspect = (id: string) => JSON.parse(docker(services, "inspect", id))[0];
  const app = (pod: string, name = "app") =>
    podContainers(services, pod).find(
      (c) => c.labels["io.kubernetes.container.name"] === name && c.state === "running",
    );

  test("env with $(VAR) and $$ rules, downward API, mounts and resource limits reach the container", () => {
    const dir = tempDir("pods-spec");
    writeFileSync(join(hostDir, "greeting"), "hi from the host\n");
    writeFileSync(
      join(dir, "spec.yaml"),
      `apiVersion: v1
kind: Pod
metadata: { name: e2e-spec, labels: { tier: web } }
spec:
  terminationGracePeriodSeconds: 1
  containers:
    - name: app
      image: ${services.busybox}
      command: ["sh", "-c", "echo $(B) $$(B) > /scratch/out; exec sleep 3600"]
      env:
        - { name: A, value: one }
        - { name: B, value: "$(A)-two" }
        - { name: C, value: "$$(A)" }
        - { name: POD, valueFrom: { fieldRef: { fieldPath: metadata.name } } }
        - { name: TIER, valueFrom: { fieldRef: { fieldPath: "metadata.labels['tier']" } } }
      resources: { requests: { cpu: 250m, memory: 32Mi }, limits: { cpu: 500m, memory: 64Mi } }
      volumeMounts:
        - { name: scratch, mountPath: /scratch }
        - { name: host, mountPath: /host, readOnly: true }
  volumes:
    - { name: scratch, emptyDir: {} }
    - { name: host, hostPath: { path: ${hostDir}, type: Directory } }
`,
    );
    const result = runBinary(["runonce", "-c", dir, ...baseFlags(services, rootDir), "--runonce_timeout", "60s"]);
    removeDir(dir);
    expect(result.stdout).toContain("1 pods running");
    const c = inspect(app("e2e-spec")!.id);
    expect(c.Config.Env).toEqual(expect.arrayContaining(["A=one", "B=one-two", "C=$(A)", "POD=e2e-spec", "TIER=web"]));
    expect(c.HostConfig.Memory).toBe(64 * 2 ** 20);
    expect(c.HostConfig.CpuQuota).toBe(50_000);
    expect(c.HostConfig.CpuShares).toBe(256);
    expect(c.HostConfig.RestartPolicy.Name).toBe("no");
    expect(c.HostConfig.Binds).toEqual(expect.arrayContaining([`${hostDir}:/host:ro`]));
    // `$$(B)` reaches the container as the literal `$(B)` (the shell then treats it as its own).
    expect(c.Config.Entrypoint).toEqual(["sh", "-c", "echo one-two $(B) > /scratch/out; exec sleep 3600"]);
    expect(docker(services, "exec", c.Id, "cat", "/scratch/out")).toBe("one-two");
    expect(docker(services, "exec", c.Id, "cat", "/host/greeting")).toBe("hi from the host");
  });

  test("a container failing its liveness probe (exec, no curl in the image) is restarted", {
    timeout: 60_000,
  }, async () => {
    const dir = tempDir("pods-live");
    writeFileSync(
      join(dir, "live.yaml"),
      `apiVersion: v1
kind: Pod
metadata: { name: e2e-live }
spec:
  terminationGracePeriodSeconds: 1
  containers:
    - name: app
      image: ${services.busybox}
      command: ["sh", "-c", "touch /tmp/healthy; sleep 2; rm /tmp/healthy; exec sleep 3600"]
      livenessProbe: { exec: { command: ["test", "-e", "/tmp/healthy"] }, periodSeconds: 1, failureThreshold: 2 }
`,
    );
    const kubelet = new KubeletProcess([
      "run",
      "-c",
      dir,
      ...baseFlags(services, rootDir),
      "--port",
      String(await freePort()),
    ]);
    try {
      await waitFor(
        "a restart after the liveness failures",
        () =>
          podContainers(services, "e2e-live").some(
            (c) => c.labels["io.kubernetes.container.restartCount"] === "1" && c.state === "running",
          ),
        30_000,
      );
    } finally {
      await kubelet.stop();
      removeDir(dir);
    }
  });

  test("runs postStart after the start and preStop before the stop, within the grace period", {
    timeout: 60_000,
  }, async () => {
    const dir = tempDir("pods-hooks");
    const marks = tempDir("pods-hooks-marks");
    writeFileSync(
      join(dir, "hooks.yaml"),
      `apiVersion: v1
kind: Pod
metadata: { name: e2e-hooks }
spec:
  terminationGracePeriodSeconds: 5
  containers:
    - name: app
      image: ${services.busybox}
      command: ["sh", "-c", "trap 'echo term >> /marks/log; exit 0' TERM; while true; do sleep 0.1; done"]
      lifecycle:
        postStart: { exec: { command: ["sh", "-c", "echo post-start >> /marks/log"] } }
        preStop: { exec: { command: ["sh", "-c", "echo pre-stop >> /marks/log"] } }
      volumeMounts: [{ name: marks, mountPath: /marks }]
  volumes: [{ name: marks, hostPath: { path: ${marks} } }]
`,
    );
    const kubelet = new KubeletProcess([
      "run",
      "-c",
      dir,
      ...baseFlags(services, rootDir),
      "--port",
      String(await freePort()),
    ]);
    try {
      await waitFor("postStart", () => readFileSync(join(marks, "log"), "utf8").includes("post-start"), 20_000);
      rmSync(join(dir, "hooks.yaml"));
      await waitFor("the pod gone", () => podContainers(services, "e2e-hooks").length === 0, 30_000);
      expect(readFileSync(join(marks, "log"), "utf8").split("\n").filter(Boolean)).toEqual([
        "post-start",
        "pre-stop",
        "term",
      ]);
    } finally {
      await kubelet.stop();
      removeDir(dir);
      removeDir(marks);
    }
  });

  test("pulls through the registry honour --registry_qps", { timeout: 60_000 }, () => {
    const dir = tempDir("pods-qps");
    for (let i = 0; i < 3; i++) {
      docker(services, "tag", services.busybox, `${services.registry}/qps/app${i}:1`);
      docker(services, "push", `${services.registry}/qps/app${i}:1`);
      docker(services, "rmi", `${services.registry}/qps/app${i}:1`);
      writeFileSync(
        join(dir, `p${i}.yaml`),
        `apiVersion: v1
kind: Pod
metadata: { name: e2e-qps-${i} }
spec:
  terminationGracePeriodSeconds: 1
  containers: [{ name: app, image: "${services.registry}/qps/app${i}:1", command: ["sleep", "3600"] }]
`,
      );
    }
    const started = Date.now();
    const result = runBinary([
      "runonce",
      "-c",
      dir,
      ...baseFlags(services, rootDir),
      "--registry_qps",
      "1",
      "--registry_burst",
      "1",
      "--runonce_timeout",
      "60s",
    ]);
    removeDir(dir);
    expect(result.stdout).toContain("3 pods running");
    // Three pulls at one per second with a burst of one cannot finish in under two seconds.
    expect(Date.now() - started).toBeGreaterThanOrEqual(2000);
  });

  test("a registry outage becomes ImagePullBackOff and the pod starts once the image can be pulled", {
    timeout: 90_000,
  }, async () => {
    const dir = tempDir("pods-outage");
    const image = `${services.registry}/outage/app${Date.now()}:1`;
    writeFileSync(
      join(dir, "outage.yaml"),
      `apiVersion: v1
kind: Pod
metadata: { name: e2e-outage }
spec:
  terminationGracePeriodSeconds: 1
  containers: [{ name: app, image: "${image}", command: ["sleep", "3600"] }]
`,
    );
    const port = await freePort();
    const kubelet = new KubeletProcess(["run", "-c", dir, ...baseFlags(services, rootDir), "--port", String(port)]);
    try {
      const reason = async () => {
        const list = (await (await fetch(`http://127.0.0.1:${port}/pods`)).json()) as {
          items: Array<{
            metadata: { name: string };
            status?: { containerStatuses?: Array<{ state?: { waiting?: { reason?: string } } }> };
          }>;
        };
        return list.items.find((p) => p.metadata.name === "e2e-outage")?.status?.containerStatuses?.[0]?.state?.waiting
          ?.reason;
      };
      await waitFor(
        "ImagePullBackOff",
        async () => (await reason().catch(() => undefined)) === "ImagePullBackOff",
        20_000,
      );
      docker(services, "tag", services.busybox, image);
      docker(services, "push", image);
      docker(services, "rmi", image);
      await waitFor("the pod running after the back-off", () => app("e2e-outage"), 40_000);
    } finally {
      await kubelet.stop();
      removeDir(dir);
    }
  });
});
