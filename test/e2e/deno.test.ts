// The same source under Deno (`deno run -A bin/kubelet.ts`), against the same dockerd: validate,
// print-config, runonce, and run with the file source and the info server (node:http under Deno, which
// has no WebSocket server: /exec answers 501 naming the compiled binary).
import { afterAll, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
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
  startKubelet,
  tempDir,
  waitFor,
} from "./harness.ts";
import { rawClient } from "./raw-client.ts";

const root = join(import.meta.dir, "../..");
const DENO = [join(root, "node_modules/.bin/deno"), "run", "-A", join(root, "bin/kubelet.ts")];

describeWithServices("kubelet under deno run -A bin/kubelet.ts", (services) => {
  const manifests = tempDir("deno-manifests");
  const rootDir = tempDir("deno-root");
  const pod = (name: string) => `apiVersion: v1
kind: Pod
metadata: { name: ${name} }
spec:
  terminationGracePeriodSeconds: 1
  containers:
    - { name: app, image: ${services.busybox}, command: ["sleep", "600"] }
`;
  const running = (name: string) =>
    podContainers(services, name).find(
      (c) => c.labels["io.kubernetes.container.name"] === "app" && c.state === "running",
    );
  afterAll(() => {
    removePods(services, "e2e-deno-once", "e2e-deno-run", "e2e-deno-idle");
    removeDir(manifests);
    removeDir(rootDir);
  });

  test("reports the deno runtime in --version", () => {
    const result = runBinary(["--version"], { command: DENO });
    expect(result.stdout).toMatch(/^kubelet v\d+\.\d+\.\d+ \(commit dev, deno \d+\.\d+\.\d+\)\n$/);
    expect(result.code).toBe(0);
  });

  test("validates the example manifests, and names the field of an invalid one", () => {
    const ok = runBinary(["validate", join(root, "testdata/pods")], { command: DENO });
    expect(ok.stdout).toContain("3 pods valid, 0 invalid");
    expect(ok.code).toBe(0);
    const bad = runBinary(["validate", "-"], {
      command: DENO,
      input: "apiVersion: v1\nkind: Pod\nmetadata: { name: x }\nspec: { containers: [{ name: a }] }\n",
    });
    expect(bad.stdout).toContain("spec.containers[0].image: Required value");
    expect(bad.code).toBe(1);
  });

  test("prints the effective configuration with its origins", () => {
    const result = runBinary(["print-config", "--sync_frequency", "1m30s", "--show-origin"], { command: DENO });
    expect(result.stdout).toContain("sync_frequency: 1m30s  # flag");
    expect(result.stdout).toContain("port: 10250  # default");
    expect(result.code).toBe(0);
  });

  test("runonce starts a pod on the real dockerd and exits 0", () => {
    const dir = tempDir("deno-once");
    writeFileSync(join(dir, "once.yaml"), pod("e2e-deno-once"));
    const result = runBinary(["runonce", "-c", dir, ...baseFlags(services, rootDir), "--runonce_timeout", "60s"], {
      command: DENO,
    });
    removeDir(dir);
    expect(result.stdout).toContain("default/e2e-deno-once");
    expect(result.code).toBe(0);
    expect(running("e2e-deno-once")).toBeTruthy();
  });

  test("run keeps a watched manifest's pod running, serves /healthz and /pods, answers /exec with a 501 naming the compiled binary, and stops on SIGTERM", async () => {
    const port = await freePort();
    writeFileSync(join(manifests, "run.yaml"), pod("e2e-deno-run"));
    const kubelet = new KubeletProcess(
      ["run", "-c", manifests, ...baseFlags(services, rootDir), "--port", String(port), "--sync_frequency", "2s"],
      DENO,
    );
    try {
      await waitFor("the pod's container to run", () => running("e2e-deno-run"), 60_000);
      const health = await waitFor("/healthz", async () => {
        const response = await fetch(`http://127.0.0.1:${port}/healthz`);
        return response.ok ? response.text() : undefined;
      });
      expect(health).toBe("ok");
      const list = (await (await fetch(`http://127.0.0.1:${port}/pods`)).json()) as {
        items: Array<{ metadata: { name: string }; status: { phase: string } }>;
      };
      expect(list.items.find((p) => p.metadata.name === "e2e-deno-run")?.status.phase).toBe("Running");
      const exec = await fetch(`http://127.0.0.1:${port}/exec/default/e2e-deno-run/app?command=true&output=1`, {
        headers: {
          ...kubelet.adminHeaders(),
          upgrade: "websocket",
          connection: "Upgrade",
          "sec-websocket-protocol": "v5.channel.k8s.io",
          "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ==",
          "sec-websocket-version": "13",
        },
      });
      expect(exec.status).toBe(501);
      expect(await exec.json()).toMatchObject({
        reason: "NotImplemented",
        message: expect.stringContaining("run the compiled binary"),
      });
    } finally {
      expect(await kubelet.stop()).toBe(0);
    }
    expect(kubelet.output).toContain("kubelet stopped; containers left running");
    expect(running("e2e-deno-run")).toBeTruthy();
  }, 90_000);

  test("--http_idle_timeout closes a kept-alive connection with no request, and never a followed log quiet for longer; a header trickler is closed by the 10 s header bound", async () => {
    const dir = tempDir("deno-idle");
    writeFileSync(
      join(dir, "idle.yaml"),
      pod("e2e-deno-idle").replace('["sleep", "600"]', '["sh", "-c", "echo ready; exec sleep 600"]'),
    );
    const kubelet = await startKubelet(
      ["run", "-c", dir, ...baseFlags(services, rootDir), "--http_idle_timeout", "2s"],
      {
        command: DENO,
        healthyWithinMs: 60_000,
      },
    );
    try {
      const quiet = await waitFor("the pod's container to run", () => running("e2e-deno-idle"), 60_000);
      const abort = new AbortController();
      const follow = await kubelet.admin("/containerLogs/default/e2e-deno-idle/app?follow=true", {
        signal: abort.signal,
      });
      const reader = follow.body!.getReader();
      let text = "";
      const readUntil = async (pattern: RegExp) => {
        while (!pattern.test(text)) {
          const { value, done } = await reader.read();
          if (done) throw new Error(`the log stream ended before ${pattern}; got ${JSON.stringify(text)}`);
          text += new TextDecoder().decode(value);
        }
      };
      await readUntil(/ready\n/);
      // A kept-alive connection after one answer: Deno.serve would hold it open for good.
      const client = rawClient(kubelet.port);
      client.socket.write("GET /healthz HTTP/1.1\r\nHost: kubelet\r\n\r\n");
      await waitFor("the kept-alive answer", () => client.state.received.endsWith("ok"), 5_000);
      const answeredAt = Date.now();
      const closedAt = await Promise.race([client.closed, Bun.sleep(20_000).then(() => 0)]);
      expect(closedAt).toBeGreaterThan(0);
      expect(closedAt - answeredAt).toBeGreaterThanOrEqual(1_500);
      expect(closedAt - answeredAt).toBeLessThan(12_000);
      // The followed log was quiet all that time (longer than the bound) and still streams.
      docker(services, "exec", quiet.id, "sh", "-c", "echo after-the-quiet > /proc/1/fd/1");
      await readUntil(/after-the-quiet\n/);
      expect(text).toBe("ready\nafter-the-quiet\n");
      abort.abort();
      // Half-sent headers, one byte a second: closed by the headers bound (10 s, checked every second),
      // never answered, long before the 40 bytes are through.
      const request = `GET /healthz HTTP/1.1\r\nHost: kubelet\r\nX-Slow: ${"a".repeat(40)}\r\n\r\n`;
      const trickler = rawClient(kubelet.port);
      const startedAt = Date.now();
      let sent = 0;
      const trickle = setInterval(() => {
        if (!trickler.socket.destroyed && sent < request.length) trickler.socket.write(request[sent++]!);
      }, 1000);
      const trickledUntil = await Promise.race([trickler.closed, Bun.sleep(40_000).then(() => 0)]).finally(() =>
        clearInterval(trickle),
      );
      expect(trickledUntil).toBeGreaterThan(0);
      expect(trickledUntil - startedAt).toBeLessThan(15_000);
      expect(sent).toBeLessThan(request.length);
      expect(trickler.state.received).not.toContain("200 OK");
    } finally {
      expect(await kubelet.stop()).toBe(0);
      removeDir(dir);
    }
  }, 120_000);
});
