// Probes: the handlers against real loopback servers and containers, the workers on a fake clock.
import { afterAll, describe, expect, test } from "bun:test";
import { createServer } from "node:http";
import { createServer as createNetServer } from "node:net";
import { createDockerRuntime } from "../../container/docker/docker.ts";
import { createProbeManager, runProbe } from "./probes.ts";
import { createEventRecorder } from "../events/events.ts";
import { FakeClock } from "../../testing/fake-clock.ts";
import { FakeRuntime } from "../../testing/fake-runtime.ts";
import { testContainerConfig, testSandboxConfig } from "../../testing/cri-configs.ts";
import { testPod } from "../../testing/pods.ts";
import { freePortNumber } from "../../testing/ports.ts";
import { startHealthServer } from "../../testing/grpc-health.ts";
import { describeWithServices } from "../../testing/services.ts";

describe("probe handlers", () => {
  let status = 200;
  const server = createServer((req, res) => {
    res.statusCode = req.url === "/redirect" ? 302 : status;
    if (req.url === "/redirect") res.setHeader("location", "/elsewhere");
    res.end(req.headers["x-probe"] ?? "");
  });
  const listening = new Promise<number>((resolve) =>
    server.listen(0, "127.0.0.1", () => resolve((server.address() as { port: number }).port)),
  );
  afterAll(() => server.close());
  const target = { runtime: new FakeRuntime(), containerId: "none", host: "127.0.0.1" };

  test("an HTTP probe succeeds on 200–399 and fails on other codes with the kubelet's message", async () => {
    const port = await listening;
    status = 204;
    expect((await runProbe({ httpGet: { port, path: "/" } }, target, 1000)).result).toBe("success");
    expect((await runProbe({ httpGet: { port, path: "/redirect" } }, target, 1000)).result).toBe("success");
    status = 500;
    expect(await runProbe({ httpGet: { port, path: "/" } }, target, 1000)).toEqual({
      result: "failure",
      message: "HTTP probe failed with statuscode: 500",
    });
  });

  test("an HTTP probe resolves named ports from the container", async () => {
    const port = await listening;
    status = 200;
    expect(
      (await runProbe({ httpGet: { port: "web" } }, { ...target, ports: [{ name: "web", containerPort: port }] }, 1000))
        .result,
    ).toBe("success");
  });

  test("a TCP probe fails on a closed loopback port", async () => {
    const result = await runProbe({ tcpSocket: { port: await freePortNumber() } }, target, 500);
    expect(result.result).toBe("failure");
    expect(result.message).toContain("dial tcp 127.0.0.1");
  });

  test("a refused HTTP or TCP probe is worded as the Go kubelet's, not as Bun's", async () => {
    const port = await freePortNumber();
    expect(await runProbe({ httpGet: { port, path: "/healthz" } }, target, 1000)).toEqual({
      result: "failure",
      message: `Get "http://127.0.0.1:${port}/healthz": dial tcp 127.0.0.1:${port}: connect: connection refused`,
    });
    expect(await runProbe({ tcpSocket: { port } }, target, 1000)).toEqual({
      result: "failure",
      message: `dial tcp 127.0.0.1:${port}: connect: connection refused`,
    });
  });

  test("an HTTP probe of a server that never answers times out in http.Client's words; one that hangs up is EOF", async () => {
    const silent = createNetServer(() => {});
    const hangsUp = createNetServer((socket) => socket.destroy());
    const portOf = (s: ReturnType<typeof createNetServer>) =>
      new Promise<number>((resolve) => s.listen(0, "127.0.0.1", () => resolve((s.address() as { port: number }).port)));
    const [quiet, rude] = [await portOf(silent), await portOf(hangsUp)];
    try {
      expect((await runProbe({ httpGet: { port: quiet, path: "/" } }, target, 200)).message).toBe(
        `Get "http://127.0.0.1:${quiet}/": context deadline exceeded (Client.Timeout exceeded while awaiting headers)`,
      );
      expect((await runProbe({ httpGet: { port: rude, path: "/" } }, target, 1000)).message).toBe(
        `Get "http://127.0.0.1:${rude}/": EOF`,
      );
    } finally {
      silent.close();
      hangsUp.close();
    }
  });

  test("a pod without an address cannot be probed over the network, and says why", async () => {
    expect((await runProbe({ httpGet: { port: 80 } }, { ...target, host: "" }, 500)).message).toContain(
      "no network address",
    );
  });
});

describe("probe workers", () => {
  function setup(probe: object, kind: "livenessProbe" | "readinessProbe" | "startupProbe", sidecar = false) {
    const clock = new FakeClock();
    const runtime = new FakeRuntime(clock);
    let healthy = true;
    runtime.execHandler = () => ({ exitCode: healthy ? 0 : 1, stdout: "", stderr: healthy ? "" : "unhealthy" });
    const failures: string[] = [];
    const changes: string[] = [];
    const events = createEventRecorder({ clock });
    const manager = createProbeManager(
      { clock, events },
      {
        runtime,
        onLivenessFailure: (_uid, name, _id, message, probe) => failures.push(`${name} (${probe}): ${message}`),
        onChange: (uid) => changes.push(uid),
      },
    );
    const probed = { name: "app", image: "local/busybox:stable", [kind]: { exec: { command: ["check"] }, ...probe } };
    const pod = testPod(
      "probed",
      sidecar
        ? { initContainers: [{ ...probed, restartPolicy: "Always" }], containers: [{ name: "main", image: "x" }] }
        : { containers: [probed] },
    );
    runtime.containers.set("c1", { id: "c1" } as never);
    manager.addContainer(pod, (sidecar ? pod.spec.initContainers! : pod.spec.containers)[0]!, "c1", clock.now(), "");
    return { clock, manager, failures, changes, events, setHealthy: (h: boolean) => (healthy = h) };
  }

  test("liveness: failureThreshold consecutive failures restart the container once; a success in between starts the count again", async () => {
    const s = setup({ periodSeconds: 10, failureThreshold: 3 }, "livenessProbe");
    s.setHealthy(false);
    // Probes at 0 s and 10 s fail, the one at 20 s succeeds: the count starts again.
    await s.clock.advance(10_000);
    s.setHealthy(true);
    await s.clock.advance(10_000);
    s.setHealthy(false);
    // 30 s and 40 s fail: four failures in all, but only two in a row.
    await s.clock.advance(20_000);
    expect(s.failures).toEqual([]);
    // 50 s: the third consecutive failure restarts.
    await s.clock.advance(10_000);
    expect(s.failures).toHaveLength(1);
    expect(s.failures[0]).toContain("failed liveness probe, will be restarted");
    await s.clock.advance(60_000);
    expect(s.failures).toHaveLength(1);
  });

  test("a failed probe is an Unhealthy event on the container's field: spec.initContainers{…} for a sidecar", async () => {
    for (const sidecar of [false, true]) {
      const s = setup({ periodSeconds: 10, failureThreshold: 3 }, "livenessProbe", sidecar);
      s.setHealthy(false);
      await s.clock.advance(0);
      expect(s.events.list().map((e) => [e.reason, e.involvedObject.fieldPath])).toEqual([
        ["Unhealthy", `spec.${sidecar ? "initContainers" : "containers"}{app}`],
      ]);
    }
  });

  test("a startup probe's failures restart the container, reported as a startup failure", async () => {
    const s = setup({ periodSeconds: 1, failureThreshold: 2 }, "startupProbe");
    s.setHealthy(false);
    await s.clock.advance(1000);
    expect(s.failures).toEqual([
      expect.stringMatching(/^app \(startup\): Container app failed startup probe, will be restarted/),
    ]);
  });

  test("liveness waits out initialDelaySeconds", async () => {
    const s = setup({ initialDelaySeconds: 30, periodSeconds: 1, failureThreshold: 1 }, "livenessProbe");
    s.setHealthy(false);
    await s.clock.advance(29_000);
    expect(s.failures).toEqual([]);
    await s.clock.advance(1000);
    expect(s.failures).toHaveLength(1);
  });

  test("readiness starts false, turns true after a success and false after failureThreshold failures", async () => {
    const s = setup({ periodSeconds: 5, failureThreshold: 2 }, "readinessProbe");
    expect(s.manager.isReady("c1")).toBe(false);
    await s.clock.advance(0);
    expect(s.manager.isReady("c1")).toBe(true);
    s.setHealthy(false);
    await s.clock.advance(5000);
    expect(s.manager.isReady("c1")).toBe(true);
    await s.clock.advance(5000);
    expect(s.manager.isReady("c1")).toBe(false);
    expect(s.changes).toHaveLength(2);
  });

  test("a startup probe holds the container as not started until it succeeds", async () => {
    const s = setup({ periodSeconds: 1, failureThreshold: 30 }, "startupProbe");
    s.setHealthy(false);
    await s.clock.advance(5000);
    expect(s.manager.isStarted("c1")).toBe(false);
    s.setHealthy(true);
    await s.clock.advance(1000);
    expect(s.manager.isStarted("c1")).toBe(true);
  });
});

describeWithServices("exec probes in a real container", (services) => {
  const runtime = createDockerRuntime({
    endpoint: services.dockerHost,
    shim: { podInfraImage: services.pause, podNetworkMode: "none" },
  });
  let id = "";
  let sandboxId = "";
  afterAll(async () => {
    await runtime.removeContainer(id);
    await runtime.removeContainer(sandboxId);
  });

  test("pass and fail by exit code in a minimal image, with no curl inside", async () => {
    const sandbox = testSandboxConfig(`u${Date.now()}`, "cfg");
    sandboxId = await runtime.runPodSandbox(sandbox);
    const config = testContainerConfig(sandbox, "probe", 0, services.busybox, ["sleep", "60"]);
    id = await runtime.createContainer(sandboxId, config, sandbox);
    await runtime.startContainer(id);
    const target = { runtime, containerId: id, host: "" };
    expect((await runProbe({ exec: { command: ["true"] } }, target, 5000)).result).toBe("success");
    const failed = await runProbe({ exec: { command: ["sh", "-c", "echo not ready; exit 1"] } }, target, 5000);
    expect(failed).toEqual({
      result: "failure",
      message: 'command ["sh","-c","echo not ready; exit 1"] exited with 1: not ready',
    });
    expect((await runProbe({ exec: { command: ["sleep", "5"] } }, target, 300)).message).toContain("timeout");
  });
});

describe("gRPC probes", () => {
  const target = { runtime: new FakeRuntime(), containerId: "none", host: "127.0.0.1" };

  test("grpc.health.v1 SERVING passes; NOT_SERVING fails with the kubelet's message; the service is sent", async () => {
    const server = await startHealthServer();
    try {
      expect(await runProbe({ grpc: { port: server.port } }, target, 1000)).toEqual({ result: "success", message: "" });
      server.set("NOT_SERVING", "api");
      expect(await runProbe({ grpc: { port: server.port, service: "api" } }, target, 1000)).toEqual({
        result: "failure",
        message: 'service unhealthy (responded with "NOT_SERVING")',
      });
      server.set("SERVING", "api");
      expect((await runProbe({ grpc: { port: server.port, service: "api" } }, target, 1000)).result).toBe("success");
      server.set("UNKNOWN");
      expect((await runProbe({ grpc: { port: server.port } }, target, 1000)).message).toBe(
        'service unhealthy (responded with "UNKNOWN")',
      );
      expect(server.asked).toEqual(["", "api", "api", ""]);
    } finally {
      await server.stop();
    }
  });

  test("a gRPC probe of a closed port fails naming the address and the timeout", async () => {
    const port = await freePortNumber();
    const { result, message } = await runProbe({ grpc: { port } }, target, 500);
    expect(result).toBe("failure");
    expect(message).toStartWith(`timeout: failed to connect service "127.0.0.1:${port}" within 0.5s`);
  });
});
