// Streamed exec and attach over the info server, on each runtime of the matrix: a WebSocket client
// speaking the channel protocol to the compiled binary's /exec and /attach, which reach the container
// through Docker's hijacked streams or containerd's streaming server.
import { afterAll, beforeAll, expect } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { connectChannels } from "../../lib/testing/channel-client.ts";
import { describeOnRuntimes, Kubelet, removeDir, startKubelet, tempDir, test, waitFor } from "./harness.ts";

const POD = "e2e-exec";

describeOnRuntimes("exec and attach streams", (services, rt) => {
  const manifests = tempDir("exec-manifests");
  const rootDir = tempDir("exec-root");
  const tokens = join(rootDir, "..", `${rootDir.split("/").pop()}-tokens`);
  const auth = { authorization: "Bearer e2e-exec-token" };
  let kubelet: Kubelet;
  const openStreams = async (type: "exec" | "attach") =>
    Number(
      new RegExp(`kubelet_runtime_open_streams\\{stream_type="${type}"\\} (\\d+)`).exec(
        await (await kubelet.api("/metrics")).text(),
      )?.[1] ?? 0,
    );
  const execUrl = (script: string, flags: string) =>
    kubelet.url(`/exec/default/${POD}/ticker?command=sh&command=-c&command=${encodeURIComponent(script)}&${flags}`);

  beforeAll(async () => {
    writeFileSync(tokens, "e2e-exec-token\n");
    writeFileSync(
      join(manifests, "ticker.yaml"),
      `apiVersion: v1
kind: Pod
metadata: { name: ${POD} }
spec:
  terminationGracePeriodSeconds: 1
  containers:
    - name: ticker
      image: ${services.busybox}
      command: ["sh", "-c", "i=0; while true; do echo line $i; i=$((i+1)); sleep 1; done"]
`,
    );
    kubelet = await startKubelet(["run", "-c", manifests, ...rt.flags(rootDir), "--auth_token_file", tokens]);
    await waitFor("the ticker running", () => rt.running(POD, "ticker"), 60_000);
  });
  afterAll(async () => {
    await kubelet?.stop("SIGKILL");
    await rt.removePods(POD);
    removeDir(manifests);
    removeDir(rootDir);
    removeDir(tokens);
  });

  test("exec takes stdin and streams stdout on channel 1, stderr on 2 and the exit code in the channel-3 Status", async () => {
    const client = await connectChannels(
      execUrl("read x; echo got $x; echo err >&2; exit 3", "input=1&output=1&error=1"),
      { headers: auth },
    );
    expect(client.protocol).toBe("v5.channel.k8s.io");
    client.send(0, "hello\n");
    const { status } = await client.finished;
    // The Go servers' "connected" signal: an empty message on the lowest writable channel comes first.
    expect(client.messages[0]).toEqual({ channel: 1, text: "" });
    expect(client.text(1)).toBe("got hello\n");
    expect(client.text(2)).toBe("err\n");
    expect(status).toEqual({
      metadata: {},
      status: "Failure",
      message: "command terminated with non-zero exit code: exit status 3",
      reason: "NonZeroExitCode",
      details: { causes: [{ reason: "ExitCode", message: "3" }] },
    });
  }, 30_000);

  test("a command that exits 0 ends with a Success Status, and v4.channel.k8s.io is served too", async () => {
    const client = await connectChannels(execUrl("echo fine", "output=1"), {
      headers: auth,
      protocols: ["v4.channel.k8s.io"],
    });
    expect(client.protocol).toBe("v4.channel.k8s.io");
    const { status } = await client.finished;
    expect(client.text(1)).toBe("fine\n");
    expect(status).toEqual({ metadata: {}, status: "Success" });
  }, 30_000);

  test("the older channel.k8s.io (binary) and base64.channel.k8s.io (text) are served, with the failure's text on channel 3", async () => {
    /** Every message of one exec over `protocol`, as the client receives it. */
    const run = (protocol: string, stdin: string | ArrayBuffer) =>
      new Promise<{ protocol: string; messages: Array<string | number[]> }>((resolve, reject) => {
        const Socket = WebSocket as unknown as new (url: string, options: object) => WebSocket;
        const socket = new Socket(execUrl("read x; echo got $x; exit 2", "input=1&output=1").replace(/^http/, "ws"), {
          protocols: [protocol],
          headers: auth,
        });
        socket.binaryType = "arraybuffer";
        const messages: Array<string | number[]> = [];
        socket.onopen = () => socket.send(stdin);
        socket.onmessage = (event: MessageEvent) =>
          messages.push(typeof event.data === "string" ? event.data : [...new Uint8Array(event.data as ArrayBuffer)]);
        socket.onerror = () => reject(new Error(`${protocol}: the WebSocket failed`));
        socket.onclose = () => resolve({ protocol: socket.protocol, messages });
      });
    const base64 = await run("base64.channel.k8s.io", `0${Buffer.from("b64\n").toString("base64")}`);
    const decoded = base64.messages.map((m) => `${(m as string)[0]}:${Buffer.from((m as string).slice(1), "base64")}`);
    expect([base64.protocol, decoded.join("|")]).toEqual([
      "base64.channel.k8s.io",
      "1:|1:got b64\n|3:command terminated with non-zero exit code: exit status 2",
    ]);
    const binary = await run("channel.k8s.io", new Uint8Array([0, ...new TextEncoder().encode("bin\n")]).buffer);
    const frames = binary.messages.map((m) => `${(m as number[])[0]}:${Buffer.from((m as number[]).slice(1))}`);
    expect([binary.protocol, frames.join("|")]).toEqual([
      "channel.k8s.io",
      "1:|1:got bin\n|3:command terminated with non-zero exit code: exit status 2",
    ]);
  }, 30_000);

  // Docker's hijacked stream half-closes; on containerd the kubelet closes stdin with a FIN on the SPDY stdin stream
  // of the runtime's streaming server (its WebSocket v4.channel.k8s.io cannot close stdin alone).
  test("closing stdin (v5) gives the command end of file, and the command ends with Success", async () => {
    const client = await connectChannels(execUrl("cat; echo eof", "input=1&output=1"), { headers: auth });
    client.send(0, "one\n");
    await client.waitFor(1, /one\n/);
    client.closeChannel(0);
    const { status } = await client.finished;
    expect(client.text(1)).toBe("one\neof\n");
    expect(status?.status).toBe("Success");
  }, 30_000);

  test("attach receives the lines the container prints after it attached, and releases the stream when the client leaves", async () => {
    const before = await openStreams("attach");
    const client = await connectChannels(kubelet.url(`/attach/default/${POD}/ticker?output=1&error=1`), {
      headers: auth,
    });
    const text = await client.waitFor(1, /line (\d+)\n(.|\n)*line (\d+)\n/);
    const numbers = [...text.matchAll(/line (\d+)/g)].map((m) => Number(m[1]));
    // Consecutive lines, live: the attach is a stream of what is printed now, not a log replay from line 0.
    expect(numbers[1]).toBe(numbers[0]! + 1);
    expect(await openStreams("attach")).toBe(before + 1);
    client.close();
    await waitFor("the attach stream released", async () => (await openStreams("attach")) === before, 5_000);
  }, 30_000);

  test("a client that leaves mid-command releases the exec stream", async () => {
    const before = await openStreams("exec");
    const client = await connectChannels(execUrl("echo started; exec sleep 600", "output=1"), { headers: auth });
    await client.waitFor(1, /started\n/);
    expect(await openStreams("exec")).toBe(before + 1);
    client.close();
    await waitFor("the exec stream released", async () => (await openStreams("exec")) === before, 5_000);
  }, 30_000);

  test("an unknown container answers 404 in Kubernetes wording, before any upgrade", async () => {
    const response = await fetch(kubelet.url(`/exec/default/${POD}/nope?command=true&output=1`), {
      headers: {
        ...auth,
        upgrade: "websocket",
        connection: "Upgrade",
        "sec-websocket-protocol": "v5.channel.k8s.io",
        "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ==",
        "sec-websocket-version": "13",
      },
    });
    expect(response.status).toBe(404);
    expect(await response.json()).toMatchObject({
      kind: "Status",
      reason: "NotFound",
      message: `container "nope" in pod "${POD}" in namespace "default" not found`,
    });
  });

  test("without the token, /exec and /attach answer 401 and the upgrade is refused", async () => {
    for (const path of [
      `/exec/default/${POD}/ticker?command=true&output=1`,
      `/attach/default/${POD}/ticker?output=1`,
    ]) {
      const response = await fetch(kubelet.url(path));
      expect(response.status).toBe(401);
      expect(await response.json()).toMatchObject({ kind: "Status", reason: "Unauthorized", code: 401 });
      await expect(connectChannels(kubelet.url(path))).rejects.toThrow(/failed to open/);
    }
  });
});
