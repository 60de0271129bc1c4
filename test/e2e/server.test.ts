// The info server of the compiled binary on a real port: token auth, and followed and previous logs
// on each runtime of the matrix (Docker's log API, or the CRI log files the kubelet reads itself);
// TLS client certificates.
import { afterAll, beforeAll, expect } from "bun:test";
import { spawnSync } from "node:child_process";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { LABEL } from "../../lib/container/runtime.ts";
import { describeWithServices } from "../../lib/testing/services.ts";
import { Kubelet, killKubeletsAfterAll, startKubelet, test, waitFor } from "./harness-kubelet.ts";
import { describeOnRuntimes } from "./harness-runtimes.ts";
import { baseFlags, freePort, removeDir, tempDir } from "./harness.ts";

describeOnRuntimes("info server on a real port", (services, rt) => {
  const dir = tempDir("server-manifests");
  const rootDir = tempDir("server-root");
  let kubelet: Kubelet;
  const url = (path: string) => kubelet.url(path);
  const auth = { authorization: "Bearer e2e-token" };

  beforeAll(async () => {
    writeFileSync(join(dir, "tokens"), "e2e-token\n");
    writeFileSync(
      join(dir, "ticker.yaml"),
      `apiVersion: v1
kind: Pod
metadata: { name: e2e-ticker }
spec:
  terminationGracePeriodSeconds: 1
  containers:
    - name: app
      image: ${services.busybox}
      command: ["sh", "-c", "i=0; while [ $i -lt 8 ]; do echo tick $i; i=$((i+1)); sleep 0.3; done; exit 1"]
`,
    );
    // Writes nothing after "ready": every later line of its log is one the test wrote.
    writeFileSync(
      join(dir, "quiet.yaml"),
      `apiVersion: v1
kind: Pod
metadata: { name: e2e-quiet }
spec:
  terminationGracePeriodSeconds: 1
  containers:
    - name: app
      image: ${services.busybox}
      command: ["sh", "-c", "echo ready; exec sleep 3600"]
`,
    );
    kubelet = await startKubelet(["run", "-c", dir, ...rt.flags(rootDir), "--auth_token_file", join(dir, "tokens")]);
  });
  afterAll(async () => {
    await kubelet?.stop("SIGKILL");
    await rt.removePods("e2e-ticker", "e2e-quiet");
    removeDir(dir);
    removeDir(rootDir);
  });

  test("with a token file, debugging routes refuse requests without the token and accept it", async () => {
    await waitFor("container", async () =>
      (await rt.podContainers("e2e-ticker")).some((c) => c.labels[LABEL.containerName] === "app"),
    );
    expect((await fetch(url("/containerLogs/default/e2e-ticker/app"))).status).toBe(401);
    expect(
      (await fetch(url("/containerLogs/default/e2e-ticker/app"), { headers: { authorization: "Bearer nope" } })).status,
    ).toBe(401);
    expect((await fetch(url("/containerLogs/default/e2e-ticker/app"), { headers: auth })).status).toBe(200);
    expect((await fetch(url("/pods"))).status).toBe(200);
  });

  test("follows a container's log as it is written, and ends the stream when the client leaves", async () => {
    const quiet = await waitFor("the quiet container running", () => rt.running("e2e-quiet", "app"));
    const openLogStreams = async () =>
      Number(
        /kubelet_runtime_open_streams\{stream_type="logs"\} (\d+)/.exec(
          await (await fetch(url("/metrics"), { headers: auth })).text(),
        )?.[1] ?? 0,
      );
    const baseline = await openLogStreams();
    const abort = new AbortController();
    const response = await fetch(url("/containerLogs/default/e2e-quiet/app?follow=true"), {
      headers: auth,
      signal: abort.signal,
    });
    const reader = response.body!.getReader();
    let text = "";
    const decoder = new TextDecoder();
    const readUntil = async (pattern: RegExp) => {
      while (!pattern.test(text)) {
        const { value, done } = await reader.read();
        if (done) throw new Error(`the log stream ended before ${pattern}; got ${JSON.stringify(text)}`);
        text += decoder.decode(value);
      }
    };
    await readUntil(/ready\n/);
    expect(await openLogStreams()).toBe(baseline + 1);
    // Lines written to the container's stdout only now, after the stream is connected, must arrive on it.
    for (const line of ["after-connect-1", "after-connect-2"]) {
      expect((await rt.runtime.exec(quiet.id, ["sh", "-c", `echo ${line} > /proc/1/fd/1`])).exitCode).toBe(0);
      await readUntil(new RegExp(`${line}\n`));
    }
    expect(text).toBe("ready\nafter-connect-1\nafter-connect-2\n");
    abort.abort();
    // The client left: the kubelet's log stream (Docker's, or its read of the CRI log file) closes, within a second.
    await waitFor("the runtime log stream closed", async () => (await openLogStreams()) === baseline, 1000);
  }, 30_000);

  test("serves the previous instance's log after a restart", async () => {
    await waitFor(
      "a restart",
      async () => (await rt.podContainers("e2e-ticker")).some((c) => Number(c.labels[LABEL.restartCount]) >= 1),
      30_000,
    );
    // previous=true reads the container the status's lastState names: wait for the status to name it.
    await kubelet.waitForPod("e2e-ticker", "lastState naming the previous instance", (p) =>
      p.status?.containerStatuses?.some((c) => c.lastState?.terminated),
    );
    const previous = await fetch(url("/containerLogs/default/e2e-ticker/app?previous=true"), { headers: auth });
    expect(previous.status).toBe(200);
    expect(await previous.text()).toContain("tick 7");
  }, 40_000);
});

// Docker only: TLS is the server's own, the same on either runtime.
describeWithServices("info server with TLS client certificates", (services) => {
  const dir = tempDir("server-tls");
  const rootDir = tempDir("server-tls-root");
  let port = 0;
  const sh = (command: string) => {
    const result = spawnSync("sh", ["-c", command], { cwd: dir, encoding: "utf8" });
    if (result.status !== 0) throw new Error(`${command}: ${result.stderr}`);
  };
  /** The HTTP status of a request trusting only `cacert` ("000": no TLS session). */
  const status = (cacert: string, ...args: string[]) =>
    spawnSync("curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", "--cacert", cacert, ...args], {
      encoding: "utf8",
    }).stdout;
  const curl = (...args: string[]) => status(join(dir, "ca.crt"), ...args);
  /** A kubelet that takes client certificates from the test CA (not startKubelet: its /healthz wait speaks plain HTTP). */
  const clientCaKubelet = (root: string, onPort: number, flags: string[]) =>
    new Kubelet(
      [
        "run",
        "-c",
        join(dir, "manifests"),
        ...baseFlags(services, root),
        "--client_ca_file",
        join(dir, "ca.crt"),
        ...flags,
      ],
      onPort,
    );

  beforeAll(async () => {
    sh("openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 1 -subj /CN=e2e-ca");
    sh(
      "openssl req -newkey rsa:2048 -nodes -keyout server.key -out server.csr -subj /CN=127.0.0.1 && printf 'subjectAltName=IP:127.0.0.1' > ext && openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out server.crt -days 1 -extfile ext",
    );
    sh(
      "openssl req -newkey rsa:2048 -nodes -keyout client.key -out client.csr -subj /CN=operator && openssl x509 -req -in client.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out client.crt -days 1",
    );
    port = await freePort();
    const kubelet = clientCaKubelet(rootDir, port, [
      ...["--tls_cert_file", join(dir, "server.crt")],
      ...["--tls_private_key_file", join(dir, "server.key")],
    ]);
    await kubelet.waitFor(
      "TLS server",
      () =>
        curl("--cert", join(dir, "client.crt"), "--key", join(dir, "client.key"), `https://127.0.0.1:${port}/pods`) ===
        "200",
      20_000,
    );
  });
  killKubeletsAfterAll();
  afterAll(() => {
    removeDir(dir);
    removeDir(rootDir);
  });

  test("serves clients with a certificate from the client CA, and those without one too: it is requested, not required (auth.test.ts has the whole table)", () => {
    expect(
      curl("--cert", join(dir, "client.crt"), "--key", join(dir, "client.key"), `https://127.0.0.1:${port}/pods`),
    ).toBe("200");
    expect(curl(`https://127.0.0.1:${port}/pods`)).toBe("200");
  });

  test("with --client_ca_file and no serving certificate, serves with a self-signed one generated under root_dir/pki, and says so", async () => {
    const ownRoot = tempDir("server-self-signed-root");
    try {
      const ownPort = await freePort();
      const kubelet = clientCaKubelet(ownRoot, ownPort, ["--hostname_override", "e2e-self-signed"]);
      const generated = join(ownRoot, "pki", "kubelet.crt");
      // Trusting only the generated certificate, under the node's name: the handshake proves the server uses it.
      const pods = () =>
        status(
          generated,
          ...["--resolve", `e2e-self-signed:${ownPort}:127.0.0.1`],
          ...["--cert", join(dir, "client.crt"), "--key", join(dir, "client.key")],
          `https://e2e-self-signed:${ownPort}/pods`,
        );
      await kubelet.waitFor("the TLS server with its own certificate", () => pods() === "200", 20_000);
      // The curl above ran synchronously: the kubelet's output reaches this process once the event loop turns.
      await kubelet.waitFor("the self-signed notice", () =>
        kubelet.output.includes(`serving with the self-signed certificate ${generated}`),
      );
      expect(existsSync(join(ownRoot, "pki", "kubelet.key"))).toBe(true);
    } finally {
      removeDir(ownRoot);
    }
  });
});
