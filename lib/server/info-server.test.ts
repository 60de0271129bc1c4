// Routes of the info server through app.request(), on a fake runtime and fake pods.
import { beforeEach, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DEFAULT_CONFIG, type KubeletConfig } from "../config/config-types.ts";
import { createEventRecorder } from "../node/events/events.ts";
import { createInfoServer, type InfoServerDeps } from "./info-server.ts";
import { silentLogger } from "../log.ts";
import { createPrometheusMetrics } from "./prometheus.ts";
import { FakeRuntime } from "../testing/fake-runtime.ts";
import { testPod } from "../testing/pods.ts";
import type { ConfigObject } from "../api/config-objects.ts";
import type { Pod, PodOperation } from "../api/types.ts";

const logDir = mkdtempSync(join(tmpdir(), "kubelet-varlog-"));
mkdirSync(join(logDir, "app"));
writeFileSync(join(logDir, "syslog"), "boot ok\n");
writeFileSync(join(logDir, "app", "app.log"), "hello\n");
symlinkSync("/etc", join(logDir, "escape"));

function setup(config: Partial<KubeletConfig> = {}, extra: Partial<InfoServerDeps> = {}) {
  const runtime = new FakeRuntime();
  const pod = testPod("web");
  const id = runtime.seedRunning(pod);
  runtime.setLogs(id, "line 1\nline 2\n");
  const merged: Array<{ op: PodOperation; pods: Pod[] }> = [];
  const mergedConfigs: Array<{ op: PodOperation; objects: ConfigObject[] }> = [];
  const metrics = createPrometheusMetrics();
  metrics.runtimeOperation("create_container", 0.2, false);
  metrics.probe("Liveness", "successful", { container: "app", pod: "web", namespace: "default", pod_uid: "u1" }, 0.01);
  const app = createInfoServer({
    config: { ...DEFAULT_CONFIG, ...config },
    pods: () => [
      {
        ...pod,
        status: {
          phase: "Running",
          containerStatuses: [
            {
              name: "app",
              image: "local/busybox:stable",
              imageID: "docker-pullable://sha256:1",
              restartCount: 2,
              ready: true,
              state: { running: { startedAt: "2026-01-01T00:00:00Z" } },
            },
          ],
        },
      },
    ],
    runtime,
    push: {
      merge: (_source, op, pods) => merged.push({ op, pods }),
      mergeConfigs: (_source, op, objects) => mergedConfigs.push({ op, objects }),
    },
    health: async () => ({ ok: true, checks: [{ name: "runtime", ok: true, message: "ok" }] }),
    summary: () => undefined,
    metrics,
    events: createEventRecorder(),
    allowPrivileged: false,
    logDir,
    ...extra,
  });
  return { app, runtime, merged, mergedConfigs, id };
}

describe("info server", () => {
  let s: ReturnType<typeof setup>;
  beforeEach(() => (s = setup()));

  test("GET /healthz answers ok, and 500 naming the failed check", async () => {
    expect(await (await s.app.request("/healthz")).text()).toBe("ok");
    const sick = setup(
      {},
      { health: async () => ({ ok: false, checks: [{ name: "runtime", ok: false, message: "unreachable" }] }) },
    );
    const response = await sick.app.request("/healthz");
    expect(response.status).toBe(500);
    expect(await response.text()).toContain("[-]runtime failed: unreachable");
  });

  test("GET /pods is a PodList with statuses and /pods/{ns}/{name} one pod", async () => {
    const list = (await (await s.app.request("/pods")).json()) as { kind: string; items: Pod[] };
    expect(list.kind).toBe("PodList");
    expect(list.items[0]!.status?.phase).toBe("Running");
    expect((await s.app.request("/pods/default/web")).status).toBe(200);
    const missing = await s.app.request("/pods/default/nope");
    expect(missing.status).toBe(404);
    expect(await missing.json()).toMatchObject({ kind: "Status", status: "Failure", reason: "NotFound", code: 404 });
  });

  test("GET /podInfo answers the 2014 shape", async () => {
    const info = await (await s.app.request("/podInfo?podID=web&podNamespace=default")).json();
    expect(info).toEqual({
      app: {
        state: { running: { startedAt: "2026-01-01T00:00:00Z" } },
        restartCount: 2,
        image: "local/busybox:stable",
        imageID: "docker-pullable://sha256:1",
        ready: true,
      },
    });
    expect((await s.app.request("/podInfo?podID=nope")).status).toBe(404);
    expect((await s.app.request("/podInfo")).status).toBe(400);
  });

  test("GET /spec still answers when the Docker Engine does not, and the warning says why", async () => {
    const warnings: string[] = [];
    const log = { ...silentLogger, warn: (m: string) => warnings.push(m) };
    const failing = setup({}, { log });
    failing.runtime.failNext("version", new Error("connect ENOENT /var/run/docker.sock"));
    const spec = (await (await failing.app.request("/spec")).json()) as Record<string, unknown>;
    expect(spec.docker_version).toBe("unknown");
    expect(warnings).toEqual([
      `GET /spec: cannot read the container runtime's version: connect ENOENT /var/run/docker.sock; reporting "unknown"`,
    ]);
  });

  test("GET /spec describes the machine and the Docker Engine", async () => {
    const spec = (await (await s.app.request("/spec/")).json()) as Record<string, unknown>;
    expect(spec).toMatchObject({ docker_version: "fake" });
    expect(spec.num_cores).toBeGreaterThan(0);
  });

  test("GET /healthz?verbose lists every check and the node's pressure conditions", async () => {
    const app = setup(
      {},
      {
        health: async () => ({
          ok: true,
          checks: [{ name: "runtime", ok: true, message: "ok" }],
          conditions: [
            {
              type: "MemoryPressure",
              status: "True",
              reason: "KubeletHasInsufficientMemory",
              message: "kubelet has insufficient memory available",
            },
            {
              type: "DiskPressure",
              status: "False",
              reason: "KubeletHasNoDiskPressure",
              message: "kubelet has no disk pressure",
            },
          ],
        }),
      },
    ).app;
    const response = await app.request("/healthz?verbose");
    expect(response.status).toBe(200);
    expect(await response.text()).toBe(
      "[+]runtime ok\n[!]MemoryPressure=True KubeletHasInsufficientMemory: kubelet has insufficient memory available\n[+]DiskPressure=False KubeletHasNoDiskPressure: kubelet has no disk pressure\nhealthz check passed\n",
    );
  });

  test("GET /stats/summary serves the analyzer's last collection, and 503 before its first", async () => {
    const before = await s.app.request("/stats/summary");
    expect(before.status).toBe(503);
    expect(await before.text()).toContain("the resource analyzer has not run");
    const summary = { node: { nodeName: "n" }, pods: [] } as never;
    const after = await setup({}, { summary: () => summary }).app.request("/stats/summary");
    expect(await after.json()).toEqual(summary);
  });

  test("GET /stats/summary asks the analyzer for a current collection with networks; /metrics/resource without", async () => {
    const asked: boolean[] = [];
    const summary = { node: { nodeName: "n" }, pods: [] } as never;
    const { app } = setup(
      {},
      { summary: () => undefined, currentSummary: async (network) => (asked.push(network), summary) },
    );
    expect(await (await app.request("/stats/summary")).json()).toEqual(summary);
    await app.request("/metrics/resource");
    expect(asked).toEqual([true, false]);
  });

  test("GET /metrics is Prometheus text with the real kubelet's names", async () => {
    const response = await s.app.request("/metrics");
    expect(response.headers.get("content-type")).toContain("text/plain; version=0.0.4");
    const text = await response.text();
    for (const name of [
      "kubelet_runtime_operations_total",
      "kubelet_running_pods",
      "kubelet_pod_start_duration_seconds",
      "process_resident_memory_bytes",
    ])
      expect(text).toContain(`# TYPE ${name}`);
    expect(text).toContain('kubelet_runtime_operations_total{operation_type="create_container"} 1');
    for (const line of text.split("\n").filter((l) => l && !l.startsWith("#")))
      expect(line).toMatch(/^[a-zA-Z_:][a-zA-Z0-9_:]*(\{[^}]*\})? -?[0-9.e+-]+(Inf)?$/);
    expect(await (await s.app.request("/metrics/probes")).text()).toContain(
      'prober_probe_total{container="app",namespace="default",pod="web",pod_uid="u1",probe_type="Liveness",result="successful"} 1',
    );
  });

  test("GET /debug/heap answers the heap's object counts, 404 where the runtime cannot count them", async () => {
    const counting = setup({}, { heapObjectCounts: async () => ({ Timeout: 3, Promise: 10 }) });
    expect(await (await counting.app.request("/debug/heap")).json()).toEqual({
      objectTypeCounts: { Timeout: 3, Promise: 10 },
    });
    const sized = setup(
      {},
      { heapObjectCounts: async () => ({ Promise: 1 }), heapBytes: async () => ({ heapSize: 5, heapCapacity: 8 }) },
    );
    expect(await (await sized.app.request("/debug/heap")).json()).toEqual({
      objectTypeCounts: { Promise: 1 },
      heapBytes: { heapSize: 5, heapCapacity: 8 },
    });
    const blind = setup({}, { heapObjectCounts: async () => undefined });
    const response = await blind.app.request("/debug/heap");
    expect(response.status).toBe(404);
    expect(await response.text()).toContain("heap object counts need the Bun runtime");
    expect((await s.app.request("/debug/heap")).status).toBe(404);
  });

  test("GET /containerLogs returns the container's output; unknown containers are 404", async () => {
    const response = await s.app.request("/containerLogs/default/web/app?tailLines=10");
    expect(await response.text()).toBe("line 1\nline 2\n");
    expect((await s.app.request("/containerLogs/default/web/nope")).status).toBe(404);
    expect((await s.app.request("/containerLogs/default/web/app?previous=true")).status).toBe(404);
    expect((await s.app.request("/containerLogs/default/web/app?tailLines=x")).status).toBe(400);
  });

  test("previous=true reads the container the status's lastState names, even the newest (CrashLoopBackOff); limitBytes cuts the log", async () => {
    const crashLooping = (containerID: string) => ({
      pods: () => [
        {
          ...testPod("web"),
          status: {
            containerStatuses: [
              {
                name: "app",
                image: "local/busybox:stable",
                imageID: "",
                restartCount: 1,
                ready: false,
                state: { waiting: { reason: "CrashLoopBackOff" } },
                lastState: { terminated: { exitCode: 1, containerID } },
              },
            ],
          },
        },
      ],
    });
    const looping = setup({}, crashLooping("docker://a-removed-container"));
    const named = setup({}, crashLooping(`docker://${looping.id}`));
    named.runtime.setLogs(named.id, "line 1\nline 2\n");
    expect(await (await named.app.request("/containerLogs/default/web/app?previous=true")).text()).toBe(
      "line 1\nline 2\n",
    );
    const gone = await looping.app.request("/containerLogs/default/web/app?previous=true");
    expect([gone.status, ((await gone.json()) as { message: string }).message]).toEqual([
      404,
      'previous terminated container "app" in pod "web" in namespace "default" not found',
    ]);
    expect(await (await s.app.request("/containerLogs/default/web/app?limitBytes=4")).text()).toBe("line");
    expect((await s.app.request("/containerLogs/default/web/app?limitBytes=0")).status).toBe(400);
  });

  test("1,000 concurrent log followers: 100 stream, the rest get 429, and a closed stream frees its place", async () => {
    const responses = await Promise.all(
      Array.from({ length: 1000 }, () => s.app.request("/containerLogs/default/web/app?follow=true")),
    );
    const streaming = responses.filter((r) => r.status === 200);
    expect(streaming.length).toBe(100);
    expect(responses.filter((r) => r.status === 429).length).toBe(900);
    expect((await s.app.request("/healthz")).status).toBe(200);
    await streaming[0]!.body!.cancel();
    const again = await s.app.request("/containerLogs/default/web/app?follow=true");
    expect(again.status).toBe(200);
    expect((await s.app.request("/containerLogs/default/web/app?follow=true")).status).toBe(429);
    await Promise.all([again, ...streaming.slice(1)].map((r) => r.body!.cancel()));
    expect((await s.app.request("/containerLogs/default/web/app?follow=true")).status).toBe(200);
  });

  test("a log the runtime cannot read is an error naming why, followed or not, and holds no follower's place", async () => {
    const broken = setup({}, { maxLogFollowers: 1 });
    broken.runtime.logs = async function* () {
      yield* [];
      throw new Error("open /var/log/pods/default_web/app/0.log: permission denied");
    };
    for (const query of ["", "?follow=true", "?follow=true"]) {
      const response = await broken.app.request(`/containerLogs/default/web/app${query}`);
      expect(response.status).toBe(500);
      expect(await response.json()).toMatchObject({
        reason: "InternalError",
        message: "open /var/log/pods/default_web/app/0.log: permission denied",
      });
    }
  });

  test("a followed log with nothing written yet answers 200 without waiting for a line, and streams what comes later", async () => {
    const response = await s.app.request("/containerLogs/default/web/app?follow=true&tailLines=0");
    expect(response.status).toBe(200);
    const reader = response.body!.getReader();
    s.runtime.writeLogs(s.id, "line 3\n");
    expect(new TextDecoder().decode((await reader.read()).value)).toBe("line 3\n");
    await reader.cancel();
  });

  test("POST /run executes in the container and returns the exit code in a header", async () => {
    s.runtime.execHandler = (_id, cmd) => ({ exitCode: 3, stdout: `ran ${cmd.join(" ")}`, stderr: "" });
    const response = await s.app.request("/run/default/web/app?cmd=ls%20-l", { method: "POST" });
    expect(response.headers.get("x-exit-code")).toBe("3");
    expect(await response.text()).toBe("ran ls -l");
    expect((await s.app.request("/run/default/web/app?cmd=ls", { method: "GET" })).status).toBe(405);
  });

  test("a known path asked with another method is 405 naming the methods its routes serve; others are 404", async () => {
    const wrong = await s.app.request("/run/default/web/app", { method: "GET" });
    expect(wrong.status).toBe(405);
    expect(wrong.headers.get("allow")).toBe("POST");
    expect(await wrong.json()).toMatchObject({ kind: "Status", reason: "MethodNotAllowed", code: 405 });
    const pods = await s.app.request("/pods", { method: "DELETE" });
    expect(pods.status).toBe(405);
    expect(pods.headers.get("allow")).toBe("GET, POST, PUT");
    expect((await s.app.request("/metrics", { method: "POST" })).headers.get("allow")).toBe("GET");
    const unknown = await s.app.request("/nothing/here");
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toMatchObject({
      reason: "NotFound",
      message: expect.stringContaining("/nothing/here"),
    });
  });

  test("GET /logs serves files under the log directory and refuses every way out of it", async () => {
    expect(await (await s.app.request("/logs/syslog")).text()).toBe("boot ok\n");
    expect(await (await s.app.request("/logs/")).text()).toContain("app/");
    for (const path of [
      "/logs/../etc/passwd",
      "/logs/%2e%2e/etc/passwd",
      "/logs/app/%2e%2e/%2e%2e/etc/passwd",
      "/logs/escape/passwd",
    ]) {
      const response = await s.app.request(path);
      expect({ path, status: response.status }).toEqual({
        path,
        status: response.status >= 400 && response.status < 500 ? response.status : -1,
      });
      expect(await response.text()).not.toContain("root:");
    }
  });

  test("pushes: POST /container and /containers set the http source; PUT, POST and DELETE /pods edit it", async () => {
    const manifest = JSON.stringify({
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name: "pushed" },
      spec: { containers: [{ name: "c", image: "busybox:1.35" }] },
    });
    expect((await s.app.request("/container", { method: "POST", body: manifest })).status).toBe(200);
    expect((await s.app.request("/containers", { method: "POST", body: `[${manifest}]` })).status).toBe(200);
    expect((await s.app.request("/pods", { method: "PUT", body: `[${manifest}]` })).status).toBe(200);
    expect((await s.app.request("/pods", { method: "POST", body: manifest })).status).toBe(201);
    expect((await s.app.request("/pods/default/pushed", { method: "DELETE" })).status).toBe(200);
    expect(s.merged.map((m) => `${m.op} ${m.pods.map((p) => p.metadata.name)}`)).toEqual([
      "SET pushed",
      "SET pushed",
      "SET pushed",
      "ADD pushed",
      "REMOVE pushed",
    ]);
  });

  test("pushes carry ConfigMaps and Secrets beside the pod; DELETE /configmaps and /secrets remove one", async () => {
    const body = `apiVersion: v1
kind: ConfigMap
metadata: { name: settings }
data: { mode: fast }
---
apiVersion: v1
kind: Secret
metadata: { name: token }
stringData: { token: s3cr3t }
---
apiVersion: v1
kind: Pod
metadata: { name: pushed }
spec: { containers: [{ name: c, image: "busybox:1.35" }] }
`;
    expect((await s.app.request("/pods", { method: "PUT", body })).status).toBe(200);
    expect((await s.app.request("/configmaps/default/settings", { method: "DELETE" })).status).toBe(200);
    expect((await s.app.request("/secrets/default/token", { method: "DELETE" })).status).toBe(200);
    expect(
      s.mergedConfigs.map((m) => `${m.op} ${m.objects.map((o) => `${o.kind}/${o.metadata.name}`).join(",")}`),
    ).toEqual(["SET ConfigMap/settings,Secret/token", "REMOVE ConfigMap/settings", "REMOVE Secret/token"]);
    expect(s.merged.map((m) => `${m.op} ${m.pods.map((p) => p.metadata.name)}`)).toEqual(["SET pushed"]);
  });

  test("an invalid pushed Secret is a 400 that names the field and never echoes the value", async () => {
    const response = await s.app.request("/pods", {
      method: "PUT",
      body: "{apiVersion: v1, kind: Secret, metadata: {name: pw}, data: {password: 'hunter2!'}}",
    });
    expect(response.status).toBe(400);
    const text = await response.text();
    expect(text).toContain("data[password]");
    expect(text).not.toContain("hunter2");
    expect(s.mergedConfigs).toEqual([]);
  });

  test("an invalid push is a 400 Status naming every field error; one over the manifest size limit is 413", async () => {
    const response = await s.app.request("/container", {
      method: "POST",
      body: JSON.stringify({
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name: "bad" },
        spec: { containers: [{ name: "c" }] },
      }),
    });
    expect(response.status).toBe(400);
    const body = (await response.json()) as { details: { causes: Array<{ field: string }> } };
    expect(body.details.causes[0]!.field).toBe("spec.containers[0].image");
    expect(s.merged).toEqual([]);
    const big = await s.app.request("/containers", {
      method: "POST",
      body: "x".repeat(10 * 2 ** 20 + 1),
      headers: { "content-length": String(10 * 2 ** 20 + 1) },
    });
    expect(big.status).toBe(413);
  });

  test("a pushed pod with an unknown field is a 400 with the did-you-mean; with --strict_manifests=false it is merged", async () => {
    const body = JSON.stringify({
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name: "typo" },
      spec: { containers: [{ name: "c", image: "busybox", comand: ["sh"] }] },
    });
    const refused = await s.app.request("/pods", { method: "PUT", body });
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as { message: string }).message).toContain(
      'unknown field "spec.containers[0].comand" (did you mean command?)',
    );
    expect(s.merged).toEqual([]);
    const lenient = setup({ strictManifests: false });
    expect((await lenient.app.request("/pods", { method: "PUT", body })).status).toBe(200);
    expect(lenient.merged.map((m) => `${m.op} ${m.pods.map((p) => p.metadata.name)}`)).toEqual(["SET typo"]);
  });

  test("a push that does not parse is a 400 naming the request, the document, line and column", async () => {
    const response = await s.app.request("/pods", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: '{"apiVersion": "v1", "kind": "Pod",\n "metadata": {"name": "a"}, "spec": {"containers": [}',
    });
    expect(response.status).toBe(400);
    const body = (await response.json()) as { message: string; details: { causes: Array<{ field: string }> } };
    expect(body.message).toStartWith(
      "invalid pod manifest: POST /pods[0]: <document>: Invalid value: cannot parse YAML/JSON at line 2, column ",
    );
    expect(body.details.causes[0]!.field).toBe("<document>");
    const latin1 = await s.app.request("/pods", {
      method: "POST",
      body: Buffer.from("metadata: {name: caf\xe9}", "latin1"),
    });
    expect(((await latin1.json()) as { message: string }).message).toContain("invalid UTF-8 byte sequence");
    expect(s.merged).toEqual([]);
  });

  test("a push of a foreign media type is a 415", async () => {
    for (const type of ["multipart/form-data; boundary=x", "image/png", "application/octet-stream"]) {
      const response = await s.app.request("/pods", { method: "POST", headers: { "content-type": type }, body: "x" });
      expect(response.status).toBe(415);
    }
    expect(s.merged).toEqual([]);
  });

  test("a push whose body never ends is cut off with a 408 after the body timeout", async () => {
    const slow = setup({}, { pushBodyTimeoutMs: 50 });
    const body = new ReadableStream<Uint8Array>({
      start: (controller) => controller.enqueue(new TextEncoder().encode("apiVersion: v1\n")),
    });
    const response = await slow.app.request("/pods", { method: "POST", body, duplex: "half" } as RequestInit);
    expect(response.status).toBe(408);
    expect(slow.merged).toEqual([]);
  });

  test("a streamed push over the size limit is a 413 even without a content-length", async () => {
    const small = setup({}, { maxManifestBytes: 1000 });
    let chunks = 0;
    const body = new ReadableStream<Uint8Array>({
      pull: (controller) =>
        ++chunks > 20 ? controller.close() : controller.enqueue(new TextEncoder().encode(`# ${"x".repeat(500)}\n`)),
    });
    const response = await small.app.request("/pods", { method: "POST", body, duplex: "half" } as RequestInit);
    expect(response.status).toBe(413);
  });

  test("a pushed pod with a hostPath at the Docker socket is refused unless sensitive host paths are allowed", async () => {
    const manifest = JSON.stringify({
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name: "sock" },
      spec: {
        containers: [{ name: "c", image: "busybox", volumeMounts: [{ name: "s", mountPath: "/s" }] }],
        volumes: [{ name: "s", hostPath: { path: "/var/run/docker.sock" } }],
      },
    });
    const refused = await s.app.request("/pods", { method: "POST", body: manifest });
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as { message: string }).message).toContain(
      'spec.volumes[0].hostPath.path: Forbidden: "/var/run/docker.sock": may not mount a sensitive host path',
    );
    const allowed = setup({}, { allowSensitiveHostPaths: true });
    expect((await allowed.app.request("/pods", { method: "POST", body: manifest })).status).toBe(201);
  });

  test("beyond loopback, debugging routes need a valid bearer token; reads stay open", async () => {
    const tokens = join(logDir, "..", `tokens-${Date.now()}`);
    writeFileSync(tokens, "# operators\ns3cret-token\n");
    const { loadAuthenticator } = await import("./auth.ts");
    const config = { ...DEFAULT_CONFIG, address: "0.0.0.0", authTokenFile: tokens };
    const secured = setup(config, { auth: await loadAuthenticator(config) });
    expect((await secured.app.request("/healthz")).status).toBe(200);
    expect((await secured.app.request("/containerLogs/default/web/app")).status).toBe(401);
    expect(
      (await secured.app.request("/containerLogs/default/web/app", { headers: { authorization: "Bearer wrong" } }))
        .status,
    ).toBe(401);
    expect(
      (
        await secured.app.request("/containerLogs/default/web/app", {
          headers: { authorization: "Bearer s3cret-token" },
        })
      ).status,
    ).toBe(200);
  });

  test("the read-only port refuses writes and debugging routes", async () => {
    const readOnly = setup({}, { readOnly: true });
    expect((await readOnly.app.request("/pods")).status).toBe(200);
    expect((await readOnly.app.request("/containerLogs/default/web/app")).status).toBe(403);
    expect((await readOnly.app.request("/pods", { method: "PUT", body: "[]" })).status).toBe(403);
  });
});

describe("server security", () => {
  test("refuses debugging handlers on a non-loopback address without authentication", async () => {
    const { checkServerSecurity } = await import("./auth.ts");
    expect(checkServerSecurity({ ...DEFAULT_CONFIG, address: "0.0.0.0" })).toMatch(
      /refusing to serve debugging handlers/,
    );
    expect(checkServerSecurity({ ...DEFAULT_CONFIG, address: "127.0.0.1" })).toBeUndefined();
    expect(
      checkServerSecurity({ ...DEFAULT_CONFIG, address: "0.0.0.0", enableDebuggingHandlers: false }),
    ).toBeUndefined();
    expect(
      checkServerSecurity({ ...DEFAULT_CONFIG, address: "0.0.0.0", authTokenFile: "/etc/kubelet/tokens" }),
    ).toBeUndefined();
  });
});

describe("security fails closed", () => {
  test("with anonymous authentication off, every route refuses anonymous callers even on loopback", async () => {
    const { loadAuthenticator, securityNotice } = await import("./auth.ts");
    const config = { ...DEFAULT_CONFIG, address: "127.0.0.1", anonymousAuth: false };
    const secured = setup(config, { auth: await loadAuthenticator(config) });
    for (const path of [
      "/containerLogs/default/web/app",
      "/healthz",
      "/pods",
      "/metrics",
      "/stats/summary",
      "/configz",
    ])
      expect([path, (await secured.app.request(path)).status]).toEqual([path, 401]);
    expect((await secured.app.request("/pods", { method: "PUT", body: "[]" })).status).toBe(401);
    expect(securityNotice(config)).toMatch(
      /anonymous.enabled is false: every route of 127.0.0.1:10250 answers 401 to every request/,
    );
  });

  test("a wrong bearer token is refused on every route, even where anonymous callers are let in", async () => {
    const tokens = join(logDir, "..", `tokens-wrong-${Date.now()}`);
    writeFileSync(tokens, "right-token\n");
    const { loadAuthenticator } = await import("./auth.ts");
    const config = { ...DEFAULT_CONFIG, authTokenFile: tokens };
    const app = setup(config, { auth: await loadAuthenticator(config) }).app;
    expect((await app.request("/pods")).status).toBe(200);
    expect((await app.request("/pods", { headers: { authorization: "Bearer wrong" } })).status).toBe(401);
    expect((await app.request("/pods", { headers: { authorization: "Bearer right-token" } })).status).toBe(200);
  });

  test("authorization mode Webhook without --kubeconfig fails closed: only the admin token (system:masters) passes", async () => {
    const tokens = join(logDir, "..", `tokens-webhook-${Date.now()}`);
    writeFileSync(tokens, "op-token\n");
    const { loadAuthenticator, webhookNotice } = await import("./auth.ts");
    const adminToken = { token: "admin-secret", user: { name: "kubelet-admin", groups: ["system:masters"] } };
    const config = { ...DEFAULT_CONFIG, authorizationMode: "Webhook" as const, authTokenFile: tokens };
    const app = setup(config, { auth: await loadAuthenticator(config, { adminToken }) }).app;
    const run = (token?: string) =>
      app.request("/run/default/web/app?cmd=id", {
        method: "POST",
        ...(token ? { headers: { authorization: `Bearer ${token}` } } : {}),
      });
    const anonymous = await run();
    expect([anonymous.status, await anonymous.text()]).toEqual([
      403,
      "Forbidden (user=system:anonymous, verb=create, resource=nodes, subresource=proxy)",
    ]);
    const op = await run("op-token");
    expect([op.status, await op.text()]).toEqual([
      403,
      "Forbidden (user=kubelet-token-1, verb=create, resource=nodes, subresource=proxy)",
    ]);
    expect((await run("admin-secret")).status).toBe(200);
    expect(webhookNotice(config)).toBe(
      "no --kubeconfig names a server for SubjectAccessReview/TokenReview, failing closed: authorization.mode is Webhook: every request but the admin token's (system:masters) is refused",
    );
  });

  test("the defaults give an anonymous loopback caller reads only; the admin token opens exec, logs and pushes", async () => {
    const { accessNotice, loadAuthenticator, securityNotice } = await import("./auth.ts");
    const adminToken = { token: "admin-secret", user: { name: "kubelet-admin", groups: ["system:masters"] } };
    const app = setup(DEFAULT_CONFIG, { auth: await loadAuthenticator(DEFAULT_CONFIG, { adminToken }) }).app;
    expect((await app.request("/pods")).status).toBe(200);
    expect((await app.request("/run/default/web/app?cmd=id", { method: "POST" })).status).toBe(401);
    expect((await app.request("/containerLogs/default/web/app")).status).toBe(401);
    expect((await app.request("/pods", { method: "PUT", body: "[]" })).status).toBe(401);
    const admin = { headers: { authorization: "Bearer admin-secret" } };
    expect((await app.request("/containerLogs/default/web/app", admin)).status).toBe(200);
    expect((await app.request("/run/default/web/app?cmd=id", { method: "POST", ...admin })).status).toBe(200);
    expect(securityNotice(DEFAULT_CONFIG)).toBeUndefined();
    expect(accessNotice(DEFAULT_CONFIG, "/var/lib/kubelet/admin-token")).toBe(
      'anonymous requests are allowed on 127.0.0.1:10250: read routes answer anyone, a wrong token is refused; debugging and write routes require the admin token "/var/lib/kubelet/admin-token", on loopback too',
    );
    expect(accessNotice({ ...DEFAULT_CONFIG, authTokenFile: "/etc/kubelet/tokens" })).toMatch(
      /debugging and write routes require a bearer token from --auth_token_file "\/etc\/kubelet\/tokens", on loopback too$/,
    );
  });
});

describe("the Kubernetes API slice on the info server", () => {
  const { createApiServer } = require("./apiserver/apiserver.ts") as typeof import("./apiserver/apiserver.ts");
  const { FakeClock } = require("../testing/fake-clock.ts") as typeof import("../testing/fake-clock.ts");
  const { fakePodFeed } = require("../testing/fake-pod-feed.ts") as typeof import("../testing/fake-pod-feed.ts");

  /** The info server with the API mounted, a token file of `reader` (group pod-readers) and `admin`, under RBAC. */
  async function secured(config: Partial<KubeletConfig> = {}, extra: Partial<InfoServerDeps> = {}) {
    const tokens = join(logDir, "..", `tokens-api-${Date.now()}-${Math.random()}`);
    writeFileSync(tokens, 'reader-token,reader,r1,"pod-readers"\nadmin-token,admin,a1,"system:masters"\n');
    const { loadAuthenticator } = await import("./auth.ts");
    const full = {
      ...DEFAULT_CONFIG,
      authTokenFile: tokens,
      authorizationMode: "RBAC" as const,
      authorizationPolicyFile: join(import.meta.dir, "../../testdata/rbac/pod-reader.yaml"),
      ...config,
    };
    const auth = await loadAuthenticator(full);
    const fake = fakePodFeed([testPod("web")]);
    const api = createApiServer({
      pods: fake.feed,
      push: fake.push,
      clock: new FakeClock(),
      validation: { allowPrivileged: false },
      maxBytes: 1 << 20,
    });
    const app = setup(full, { auth, api: api.app, ...extra }).app;
    const as = (token: string, path: string, init: RequestInit = {}) =>
      app.request(path, { ...init, headers: { authorization: `Bearer ${token}`, ...(init.headers ?? {}) } });
    return { as, auth, fake, app };
  }

  test("a reader the policy grants pods get/list/watch lists, gets and watches pods, and reads discovery", async () => {
    const { as, auth } = await secured();
    for (const path of ["/api", "/api/v1", "/version", "/api/v1/pods", "/api/v1/namespaces/default/pods/web"])
      expect([path, (await as("reader-token", path)).status]).toEqual([path, 200]);
    const watch = await as("reader-token", "/api/v1/pods?watch=true&timeoutSeconds=1");
    expect(watch.status).toBe(200);
    await watch.body?.cancel();
    auth.stop();
  });

  test("what the policy does not grant is a 403 Status worded as kube-apiserver's", async () => {
    const { as, auth } = await secured();
    const denied = await as("reader-token", "/api/v1/namespaces/default/pods/web", { method: "DELETE" });
    expect(denied.status).toBe(403);
    expect(await denied.json()).toMatchObject({
      kind: "Status",
      reason: "Forbidden",
      message:
        'pods "web" is forbidden: User "reader" cannot delete resource "pods" in API group "" in the namespace "default"',
      code: 403,
    });
    const stream = await as("reader-token", "/api/v1/namespaces/default/pods/web/exec", { method: "POST" });
    expect((await stream.json()).message).toContain('cannot create resource "pods/exec"');
    const nodes = await as("reader-token", "/api/v1/nodes");
    expect((await nodes.json()).message).toBe(
      'nodes is forbidden: User "reader" cannot list resource "nodes" in API group "" at the cluster scope',
    );
    auth.stop();
  });

  test("the admin token writes through the API to the push source; with debugging handlers off writes are refused", async () => {
    const { as, fake, auth } = await secured();
    const body = JSON.stringify({
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name: "p" },
      spec: { containers: [{ name: "c", image: "busybox" }] },
    });
    const created = await as("admin-token", "/api/v1/namespaces/default/pods", { method: "POST", body });
    expect(created.status).toBe(201);
    expect(fake.pushes.map((p) => p.op)).toEqual(["ADD"]);
    auth.stop();
    const off = await secured({ enableDebuggingHandlers: false });
    const refused = await off.as("admin-token", "/api/v1/namespaces/default/pods", { method: "POST", body });
    expect(refused.status).toBe(403);
    expect((await refused.json()).message).toContain("--enable_debugging_handlers=false");
    expect((await off.as("admin-token", "/api/v1/pods")).status).toBe(200);
    off.auth.stop();
  });

  test("the read-only port does not serve the API", async () => {
    const { app } = await secured({}, { readOnly: true });
    const refused = await app.request("/api/v1/pods");
    expect(refused.status).toBe(404);
    expect((await refused.json()).message).toContain("the read-only port does not serve the Kubernetes API");
  });
});
