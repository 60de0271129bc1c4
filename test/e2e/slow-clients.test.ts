// Slow and idle clients against the compiled binary's info server: --http_idle_timeout closes
// connections that hold a socket without a request in flight, never a followed log or an exec.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describeWithServices } from "../../lib/testing/services.ts";
import { KEPT_ENGINE_CONNECTIONS } from "../../lib/container/docker/docker.ts";
import {
  baseFlags,
  docker,
  type Kubelet,
  killKubeletsAfterAll,
  podContainers,
  removeDir,
  removePods,
  startKubelet,
  tempDir,
  waitFor,
} from "./harness.ts";
import { rawClient } from "./raw-client.ts";

const IDLE_SECONDS = 2;

/** Open file descriptors of a process. */
const openFds = (pid: number) => readdirSync(`/proc/${pid}/fd`).length;
/** Resident memory of a process now, MB. */
const rssMb = (pid: number) =>
  Number(/^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"))![1]) / 1024;

describeWithServices("slow and idle clients", (services) => {
  const dir = tempDir("slow-clients-manifests");
  const rootDir = tempDir("slow-clients-root");
  let port = 0;
  let kubelet: Kubelet;
  const url = (path: string) => kubelet.url(path);
  const healthz = async () => (await fetch(url("/healthz"))).status;
  // Resolves once a kept-alive connection opened now has been closed for idling: proof that more than
  // the idle bound has passed on the server's own clock, without sleeping a guessed time.
  const idleBoundElapsed = async () => {
    const client = rawClient(port);
    client.socket.write("GET /healthz HTTP/1.1\r\nHost: kubelet\r\n\r\n");
    await waitFor("the kept-alive probe's answer", () => client.state.received.endsWith("ok"), 5_000);
    return client.closed;
  };

  beforeAll(async () => {
    writeFileSync(
      join(dir, "quiet.yaml"),
      `apiVersion: v1
kind: Pod
metadata: { name: e2e-slow-clients }
spec:
  terminationGracePeriodSeconds: 1
  containers:
    - name: app
      image: ${services.busybox}
      command: ["sh", "-c", "echo ready; exec sleep 3600"]
`,
    );
    kubelet = await startKubelet([
      "run",
      "-c",
      dir,
      ...baseFlags(services, rootDir),
      "--http_idle_timeout",
      `${IDLE_SECONDS}s`,
    ]);
    port = kubelet.port;
  });
  killKubeletsAfterAll();
  afterAll(() => {
    removePods(services, "e2e-slow-clients");
    removeDir(dir);
    removeDir(rootDir);
  });

  test("a kept-alive connection with no request is closed after --http_idle_timeout, and /healthz answers meanwhile", async () => {
    const client = rawClient(port);
    client.socket.write("GET /healthz HTTP/1.1\r\nHost: kubelet\r\n\r\n");
    await waitFor("the answer", () => client.state.received.endsWith("ok"), 5_000);
    const answeredAt = Date.now();
    expect(await healthz()).toBe(200);
    // Bun checks idle connections every few seconds, so the close comes within the bound plus that tick.
    const closedAt = await Promise.race([client.closed, Bun.sleep(20_000).then(() => 0)]);
    expect(closedAt).toBeGreaterThan(0);
    expect(closedAt - answeredAt).toBeLessThan((IDLE_SECONDS + 10) * 1000);
    expect(await healthz()).toBe(200);
  }, 30_000);

  test("a client trickling its headers one byte a second is closed before it finishes, while /healthz answers others", async () => {
    const request = `GET /healthz HTTP/1.1\r\nHost: kubelet\r\nX-Slow: ${"a".repeat(40)}\r\n\r\n`;
    const client = rawClient(port);
    const startedAt = Date.now();
    let sent = 0;
    const trickle = setInterval(() => {
      if (!client.socket.destroyed && sent < request.length) client.socket.write(request[sent++]!);
    }, 1000);
    try {
      let answered = 0;
      while (!client.state.closedAt) {
        expect(await healthz()).toBe(200);
        answered++;
        await Promise.race([client.closed, Bun.sleep(500)]);
      }
      expect(answered).toBeGreaterThan(1);
      expect(sent).toBeLessThan(request.length);
      expect(client.state.received).toBe("");
      expect(client.state.closedAt - startedAt).toBeLessThan(20_000);
    } finally {
      clearInterval(trickle);
    }
  }, 40_000);

  test("a followed log quiet for longer than --http_idle_timeout keeps streaming", async () => {
    const quiet = await waitFor("the quiet container running", () =>
      podContainers(services, "e2e-slow-clients").find(
        (c) => c.labels["io.kubernetes.container.name"] === "app" && c.state === "running",
      ),
    );
    const abort = new AbortController();
    const response = await fetch(url("/containerLogs/default/e2e-slow-clients/app?follow=true"), {
      headers: kubelet.adminHeaders(),
      signal: abort.signal,
    });
    const reader = response.body!.getReader();
    const decoder = new TextDecoder();
    let text = "";
    const readUntil = async (pattern: RegExp) => {
      while (!pattern.test(text)) {
        const { value, done } = await reader.read();
        if (done) throw new Error(`the log stream ended before ${pattern}; got ${JSON.stringify(text)}`);
        text += decoder.decode(value);
      }
    };
    await readUntil(/ready\n/);
    await idleBoundElapsed();
    await idleBoundElapsed();
    docker(services, "exec", quiet.id, "sh", "-c", "echo after-the-quiet > /proc/1/fd/1");
    await readUntil(/after-the-quiet\n/);
    expect(text).toBe("ready\nafter-the-quiet\n");
    abort.abort();
  }, 60_000);

  test("an exec that answers only after longer than --http_idle_timeout gets its answer", async () => {
    await waitFor("the quiet container running", () =>
      podContainers(services, "e2e-slow-clients").find(
        (c) => c.labels["io.kubernetes.container.name"] === "app" && c.state === "running",
      ),
    );
    const seconds = IDLE_SECONDS + 8;
    const response = await fetch(
      url(`/run/default/e2e-slow-clients/app?command=sh&command=-c&command=sleep ${seconds}; echo slept`),
      { method: "POST", headers: kubelet.adminHeaders() },
    );
    expect(response.status).toBe(200);
    expect(await response.text()).toBe("slept\n");
  }, 60_000);

  test("1,000 followers of a real container's log: 100 stream, the rest get 429 with Retry-After, RSS stays under 256 MB, /healthz answers, every stream ends when the container is removed, no fd is left", async () => {
    const app = await waitFor("the quiet container running", () =>
      podContainers(services, "e2e-slow-clients").find(
        (c) => c.labels["io.kubernetes.container.name"] === "app" && c.state === "running",
      ),
    );
    const pid = kubelet.child.pid!;
    expect(await healthz()).toBe(200);
    const fdsBefore = openFds(pid);
    const rssBefore = rssMb(pid);
    const admin = `Authorization: Bearer ${kubelet.adminToken()}\r\n`;
    const clients = Array.from({ length: 1000 }, () => {
      const client = rawClient(port);
      client.socket.write(
        `GET /containerLogs/default/e2e-slow-clients/app?follow=true HTTP/1.1\r\nHost: kubelet\r\n${admin}Connection: close\r\n\r\n`,
      );
      return client;
    });
    const status = (c: (typeof clients)[number]) => /^HTTP\/1\.1 (\d+)/.exec(c.state.received)?.[1];
    await waitFor("every follower answered", () => clients.every(status), 60_000);
    const streaming = clients.filter((c) => status(c) === "200");
    const refused = clients.filter((c) => status(c) === "429");
    expect(streaming.length).toBe(100);
    expect(refused.length).toBe(900);
    expect(refused[0]!.state.received).toMatch(/Retry-After: 10/i);
    expect(refused[0]!.state.received).toContain("too many log streams followed at once (100)");
    await waitFor("every stream showing the log", () => streaming.every((c) => c.state.received.includes("ready\n")));
    let peakRss = rssMb(pid);
    for (let i = 0; i < 5; i++) {
      expect(await healthz()).toBe(200);
      peakRss = Math.max(peakRss, rssMb(pid));
    }
    console.log(
      `1,000 followers: RSS ${rssBefore.toFixed(0)} MB before, ${peakRss.toFixed(0)} MB with 100 streams open; ${fdsBefore} fds before`,
    );
    expect(peakRss).toBeLessThan(256);
    docker(services, "rm", "-f", app.id);
    await waitFor("every stream ended", () => streaming.every((c) => c.state.closedAt > 0), 30_000);
    for (const c of streaming) expect(c.state.received).toMatch(/\r\n0\r\n\r\n$/);
    await waitFor("every refused client closed", () => refused.every((c) => c.state.closedAt > 0), 30_000);
    // The kubelet restarts the container and may hold a connection or two of its own meanwhile, and keeps at most
    // KEPT_ENGINE_CONNECTIONS idle connections to the Engine for reuse.
    const bound = fdsBefore + 2 + KEPT_ENGINE_CONNECTIONS;
    await waitFor(`the kubelet's fds back to ${fdsBefore} (at most ${bound})`, () => openFds(pid) <= bound, 30_000);
    expect(await healthz()).toBe(200);
  }, 180_000);
});
