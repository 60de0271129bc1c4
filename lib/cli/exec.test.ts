import { describe, expect, test } from "bun:test";
import { PassThrough } from "node:stream";
import { execCommand, execPath, exitCodeOf, type ExecOptions } from "./exec.ts";

const options = (over: Partial<ExecOptions> = {}): ExecOptions => ({
  pod: "web",
  namespace: "default",
  command: ["sh", "-c", "echo hi; exit 3"],
  stdin: false,
  tty: false,
  ...over,
});

/** A WebSocket the test plays the kubelet's side of. */
function fakeSocket(protocol = "v5.channel.k8s.io") {
  const sent: number[][] = [];
  const socket = {
    OPEN: 1,
    readyState: 0,
    protocol,
    url: "wss://127.0.0.1:10250/api/v1/namespaces/default/pods/web/exec?command=sh",
    binaryType: "blob",
    send: (data: Uint8Array) => void sent.push([...data]),
    onopen: undefined as undefined | (() => void),
    onmessage: undefined as undefined | ((event: { data: ArrayBuffer }) => void),
    onclose: undefined as undefined | ((event: { code: number; reason: string }) => void),
  };
  const text = (s: string) => [...new TextEncoder().encode(s)];
  return {
    sent,
    socket,
    open: () => {
      socket.readyState = 1;
      socket.onopen?.();
    },
    message: (channel: number, payload: string) =>
      socket.onmessage?.({ data: new Uint8Array([channel, ...text(payload)]).buffer }),
    close: (code = 1000) => socket.onclose?.({ code, reason: "" }),
  };
}

const collect = (stream: PassThrough) => {
  const chunks: Buffer[] = [];
  stream.on("data", (c: Buffer) => chunks.push(c));
  return () => Buffer.concat(chunks).toString();
};

describe("kubelet exec", () => {
  test("asks for the command repeated, stdout and stderr, and with a terminal one stream (no stderr) and tty", () => {
    expect(execPath(options())).toBe(
      "/api/v1/namespaces/default/pods/web/exec?command=sh&command=-c&command=echo+hi%3B+exit+3&stdout=true&stderr=true",
    );
    expect(execPath(options({ stdin: true, tty: true, container: "app", command: ["sh"] }))).toBe(
      "/api/v1/namespaces/default/pods/web/exec?command=sh&container=app&stdin=true&stdout=true&tty=true",
    );
  });

  test("the exit code is the command's: 0 on Success, the ExitCode cause of NonZeroExitCode, 1 with the message otherwise", () => {
    const err = new PassThrough();
    const printed = collect(err);
    expect(exitCodeOf(JSON.stringify({ status: "Success" }), err)).toBe(0);
    const nonZero = {
      status: "Failure",
      reason: "NonZeroExitCode",
      message: "command terminated with non-zero exit code: error executing command [sh], exit code 3",
      details: { causes: [{ reason: "ExitCode", message: "3" }] },
    };
    expect(exitCodeOf(JSON.stringify(nonZero), err)).toBe(3);
    expect(printed()).toBe("");
    expect(exitCodeOf(JSON.stringify({ status: "Failure", message: 'container "db" not found' }), err)).toBe(1);
    expect(printed()).toBe('error: container "db" not found\n');
  });

  test("stdout and stderr reach their streams, stdin is sent on channel 0 and its end closes it (v5); the Status sets the exit code", async () => {
    const fake = fakeSocket();
    const input = new PassThrough();
    const out = new PassThrough();
    const err = new PassThrough();
    const [printed, complained] = [collect(out), collect(err)];
    const done = execCommand(
      { webSocket: () => fake.socket as unknown as WebSocket, fetch: async () => new Response("{}") },
      options({ stdin: true }),
      { in: input, out, err },
    );
    fake.open();
    input.write("typed");
    input.end();
    await new Promise((r) => setTimeout(r, 10));
    expect(fake.sent).toEqual([
      [0, ...new TextEncoder().encode("typed")],
      [255, 0],
    ]);
    fake.message(1, "hi\n");
    fake.message(2, "oops\n");
    fake.message(
      3,
      JSON.stringify({
        status: "Failure",
        reason: "NonZeroExitCode",
        details: { causes: [{ reason: "ExitCode", message: "3" }] },
      }),
    );
    fake.close();
    expect(await done).toBe(3);
    expect(printed()).toBe("hi\n");
    expect(complained()).toBe("oops\n");
  });

  test("with a terminal the window size is sent on channel 4 at once and whenever it changes", async () => {
    const fake = fakeSocket();
    const out = Object.assign(new PassThrough(), { columns: 80, rows: 24 });
    const done = execCommand(
      { webSocket: () => fake.socket as unknown as WebSocket, fetch: async () => new Response("{}") },
      options({ tty: true }),
      { in: new PassThrough(), out, err: new PassThrough() },
    );
    fake.open();
    out.columns = 120;
    out.emit("resize");
    const size = (w: number, h: number) => [4, ...new TextEncoder().encode(JSON.stringify({ Width: w, Height: h }))];
    expect(fake.sent).toEqual([size(80, 24), size(120, 24)]);
    fake.message(3, JSON.stringify({ status: "Success" }));
    fake.close();
    expect(await done).toBe(0);
  });

  test("a refused upgrade is explained by the pod's Status, as kubectl prints it, with exit code 1", async () => {
    const fake = fakeSocket();
    const err = new PassThrough();
    const complained = collect(err);
    const notFound = {
      kind: "Status",
      status: "Failure",
      reason: "NotFound",
      message: 'pods "web" not found',
      code: 404,
    };
    const done = execCommand(
      {
        webSocket: () => fake.socket as unknown as WebSocket,
        fetch: async () => new Response(JSON.stringify(notFound), { status: 404 }),
      },
      options(),
      { in: new PassThrough(), out: new PassThrough(), err },
    );
    fake.close(1006);
    expect(await done).toBe(1);
    expect(complained()).toBe('Error from server (NotFound): pods "web" not found\n');
  });
});
