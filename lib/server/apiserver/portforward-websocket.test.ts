import { describe, expect, test } from "bun:test";
import { echoPortForward } from "../../testing/echo-port-forward.ts";
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
