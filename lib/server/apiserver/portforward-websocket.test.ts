import { describe, expect, test } from "bun:test";
import { catPortForward, echoPortForward } from "../../testing/echo-port-forward.ts";
import type { ServerSocket } from "../../platform/websocket.ts";
import { parsePorts, webSocketPortForwardSession } from "./portforward-websocket.ts";

/** A server socket that records what is sent and whether it was closed. */
function recordingSocket() {
  const sent: Array<Uint8Array | string> = [];
  let closed: (() => void) | undefined;
  const closing = new Promise<void>((resolve) => (closed = resolve));
  const socket: ServerSocket = {
    send: async (data) => void sent.push(data),
    close: () => closed!(),
  };
  return { socket, sent, closing };
}

const bytes = (...values: number[]) => new Uint8Array(values);

describe("the WebSocket port forward protocol", () => {
  test("each port's data and error channels open with the port in two little-endian bytes; bytes go both ways", async () => {
    const connection = echoPortForward();
    const { socket, sent, closing } = recordingSocket();
    const session = webSocketPortForwardSession({
      protocol: "v4.channel.k8s.io",
      ports: [8080],
      forward: async () => connection.stream,
      target: "pod web",
    });
    session.open(socket);
    session.message(new Uint8Array([0, ...new TextEncoder().encode("hi")]));
    await Bun.sleep(0);
    connection.finish();
    await closing;
    expect(sent.slice(0, 2)).toEqual([bytes(0, 0x90, 0x1f), bytes(1, 0x90, 0x1f)]);
    expect(sent).toContainEqual(new Uint8Array([0, ...new TextEncoder().encode("HI")]));
    expect(connection.seen.written).toBe("hi");
  });

  test("bytes sent while the connection opened reach the pod in order, its answer read meanwhile (no deadlock past the pipe)", async () => {
    let open!: () => void;
    const opening = new Promise<void>((resolve) => (open = resolve));
    const { socket, sent } = recordingSocket();
    const session = webSocketPortForwardSession({
      protocol: "v4.channel.k8s.io",
      ports: [80],
      forward: () => catPortForward(opening),
      target: "pod web",
    });
    session.open(socket);
    // 4 MB before the connection is open (far more than a pipe holds), 1 MB more while those are being written.
    const chunks = Array.from({ length: 160 }, (_, i) => `${i}:`.padEnd(32 * 1024, String.fromCharCode(97 + (i % 26))));
    const message = (chunk: string) => new Uint8Array([0, ...new TextEncoder().encode(chunk)]);
    for (const chunk of chunks.slice(0, 128)) session.message(message(chunk));
    await Bun.sleep(20);
    open();
    for (const chunk of chunks.slice(128)) session.message(message(chunk));
    const expected = chunks.join("");
    // The first two messages are the channels' openings.
    const data = () => sent.slice(2).filter((m): m is Uint8Array => typeof m !== "string" && m[0] === 0);
    const back = () => data().reduce((total, m) => total + m.length - 1, 0);
    for (const deadline = Date.now() + 20_000; back() < expected.length && Date.now() < deadline; ) await Bun.sleep(20);
    expect(back()).toBe(expected.length);
    const text = data()
      .map((m) => new TextDecoder().decode(m.subarray(1)))
      .join("");
    expect(text === expected).toBe(true);
    session.close();
  }, 30_000);

  test("a failed forward is told on the port's error channel as text, then the socket closes", async () => {
    const { socket, sent, closing } = recordingSocket();
    const session = webSocketPortForwardSession({
      protocol: "v4.channel.k8s.io",
      ports: [80, 81],
      forward: async (port) => {
        if (port === 81) throw new Error("connection refused");
        const connection = echoPortForward();
        connection.finish();
        return connection.stream;
      },
      target: "pod web",
    });
    session.open(socket);
    await closing;
    expect(sent).toContainEqual(
      new Uint8Array([3, ...new TextEncoder().encode("error forwarding port 81 to pod web: connection refused")]),
    );
  });

  test("v4.base64.channel.k8s.io sends the channel as a digit and the payload in base64", async () => {
    const { socket, sent } = recordingSocket();
    const connection = echoPortForward();
    webSocketPortForwardSession({
      protocol: "v4.base64.channel.k8s.io",
      ports: [80],
      forward: async () => connection.stream,
      target: "pod web",
    }).open(socket);
    await Bun.sleep(0);
    expect(sent.slice(0, 2)).toEqual([
      `0${Buffer.from([80, 0]).toString("base64")}`,
      `1${Buffer.from([80, 0]).toString("base64")}`,
    ]);
  });

  test("ports come comma-separated or repeated; a bad one is named", () => {
    expect(parsePorts(["80,443", "8080"])).toEqual([80, 443, 8080]);
    expect(parsePorts(["http"])).toBe('unable to parse "http" as a port');
    expect(parsePorts(["0"])).toBe('port "0" must be > 0');
    expect(parsePorts([])).toBe('query parameter "ports" is required: give ?ports=8080 (or several, comma-separated)');
  });
});
