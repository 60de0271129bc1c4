// kubectl's side of a port forward, played frame by frame as client-go's spdystream writes it, against the session.
import { describe, expect, test } from "bun:test";
import { createDeflate, constants as zlibConstants } from "node:zlib";
import type { ServerSocket } from "../../platform/websocket.ts";
import { catPortForward, echoPortForward } from "../../testing/echo-port-forward.ts";
import {
  FLAG_FIN,
  FRAME,
  RST,
  SPDY3_DICTIONARY,
  controlFrame,
  createFrameReader,
  encodeFrame,
  encodeHeaderBlock,
  words,
  type SpdyFrame,
} from "../../container/spdy-frames.ts";
import { spdyPortForwardSession } from "./portforward-spdy.ts";

/** A client: its header compressor (Go's: one zlib stream with the dictionary) and the frames the server sent. */
function client() {
  const deflate = createDeflate({ dictionary: Buffer.from(SPDY3_DICTIONARY) });
  const compressed: Buffer[] = [];
  deflate.on("data", (chunk: Buffer) => compressed.push(chunk));
  const compress = (block: Uint8Array) =>
    new Promise<Uint8Array>((resolve) => {
      deflate.write(block);
      deflate.flush(zlibConstants.Z_SYNC_FLUSH, () => resolve(new Uint8Array(Buffer.concat(compressed.splice(0)))));
    });
  const reader = createFrameReader();
  const received: SpdyFrame[] = [];
  const socket: ServerSocket = {
    send: async (data) => void received.push(...reader.push(data as Uint8Array)),
    close: () => {},
  };
  const synStream = async (streamId: number, headers: Record<string, string[]>) =>
    encodeFrame(
      controlFrame(
        FRAME.synStream,
        new Uint8Array([...words(streamId, 0), 0, 0, ...(await compress(encodeHeaderBlock(headers)))]),
      ),
    );
  const data = (streamId: number, text: string, flags = 0) =>
    encodeFrame({ control: false, streamId, flags, data: new TextEncoder().encode(text) });
  return { socket, received, synStream, data };
}

const settled = () => new Promise((resolve) => setTimeout(resolve, 20));
const typeOf = (frame: SpdyFrame) => (frame.control ? `${frame.type}` : `data ${frame.streamId}`);
const streamOf = (frame: SpdyFrame) =>
  frame.control ? new DataView(frame.data.buffer, frame.data.byteOffset).getUint32(0) : frame.streamId;

describe("SPDY port forward session", () => {
  test("an error and a data stream with one requestID are replied to, joined to the port, and finished", async () => {
    const connection = echoPortForward();
    const ports: number[] = [];
    const session = spdyPortForwardSession({
      forward: async (port) => (ports.push(port), connection.stream),
      target: "pod web",
    });
    const kubectl = client();
    session.open(kubectl.socket);
    session.message(await kubectl.synStream(1, { streamtype: ["error"], port: ["8080"], requestid: ["0"] }));
    session.message(kubectl.data(1, "", FLAG_FIN));
    session.message(await kubectl.synStream(3, { streamtype: ["data"], port: ["8080"], requestid: ["0"] }));
    session.message(kubectl.data(3, "hello"));
    session.message(kubectl.data(3, "", FLAG_FIN));
    await settled();
    expect(ports).toEqual([8080]);
    expect(connection.seen).toMatchObject({ written: "hello", clientEnded: true });
    const replies = kubectl.received.filter((f) => f.control && f.type === FRAME.synReply).map(streamOf);
    expect(replies).toEqual([1, 3]);
    const data = kubectl.received.filter((f) => !f.control);
    expect(data.map((f) => [f.streamId, new TextDecoder().decode(f.data), f.flags])).toEqual([
      [3, "HELLO", 0],
      [3, "", FLAG_FIN],
      [1, "", FLAG_FIN],
    ]);
  });

  test("a forward that fails writes upstream's message on the error stream", async () => {
    const session = spdyPortForwardSession({
      forward: async () => {
        throw new Error("connection refused");
      },
      target: "pod web, uid 1",
    });
    const kubectl = client();
    session.open(kubectl.socket);
    session.message(await kubectl.synStream(1, { streamtype: ["error"], port: ["81"], requestid: ["7"] }));
    session.message(await kubectl.synStream(3, { streamtype: ["data"], port: ["81"], requestid: ["7"] }));
    await settled();
    const onError = kubectl.received.filter((f) => !f.control && f.streamId === 1 && f.data.length);
    expect(new TextDecoder().decode(onError[0]!.data)).toBe(
      "error forwarding port 81 to pod web, uid 1: connection refused",
    );
  });

  test("a stream without a valid port or stream type is reset, and pings are answered", async () => {
    const session = spdyPortForwardSession({ forward: async () => echoPortForward().stream, target: "pod web" });
    const kubectl = client();
    session.open(kubectl.socket);
    session.message(await kubectl.synStream(1, { streamtype: ["data"], port: ["http"], requestid: ["0"] }));
    session.message(encodeFrame(controlFrame(FRAME.ping, words(5))));
    await settled();
    expect(kubectl.received.map(typeOf)).toEqual([`${FRAME.rstStream}`, `${FRAME.ping}`]);
    expect([...kubectl.received[0]!.data]).toEqual([...words(1, RST.protocolError)]);
    expect([...kubectl.received[1]!.data]).toEqual([...words(5)]);
  });

  test("the client's reset of a data stream closes the connection to the pod", async () => {
    const connection = echoPortForward();
    const session = spdyPortForwardSession({ forward: async () => connection.stream, target: "pod web" });
    const kubectl = client();
    session.open(kubectl.socket);
    session.message(await kubectl.synStream(1, { streamtype: ["error"], port: ["80"], requestid: ["0"] }));
    session.message(await kubectl.synStream(3, { streamtype: ["data"], port: ["80"], requestid: ["0"] }));
    await settled();
    session.message(encodeFrame(controlFrame(FRAME.rstStream, words(3, RST.cancel))));
    await settled();
    expect(connection.seen.closed).toBe(true);
  });

  test("bytes sent while the connection opened reach the pod in order, its answer read meanwhile (no deadlock past the pipe)", async () => {
    let open!: () => void;
    const opening = new Promise<void>((resolve) => (open = resolve));
    const session = spdyPortForwardSession({ forward: () => catPortForward(opening), target: "pod web" });
    const kubectl = client();
    session.open(kubectl.socket);
    session.message(await kubectl.synStream(1, { streamtype: ["error"], port: ["80"], requestid: ["0"] }));
    session.message(await kubectl.synStream(3, { streamtype: ["data"], port: ["80"], requestid: ["0"] }));
    // 4 MB before the connection is open (far more than a pipe holds), 1 MB more while those are being written.
    const chunks = Array.from({ length: 160 }, (_, i) => `${i}:`.padEnd(32 * 1024, String.fromCharCode(97 + (i % 26))));
    for (const chunk of chunks.slice(0, 128)) session.message(kubectl.data(3, chunk));
    await settled();
    open();
    for (const chunk of chunks.slice(128)) session.message(kubectl.data(3, chunk));
    const expected = chunks.join("");
    const back = () =>
      kubectl.received.filter((f) => !f.control && f.streamId === 3).reduce((total, f) => total + f.data.length, 0);
    for (const deadline = Date.now() + 20_000; back() < expected.length && Date.now() < deadline; ) await settled();
    expect(back()).toBe(expected.length);
    const text = kubectl.received
      .filter((f) => !f.control && f.streamId === 3)
      .map((f) => new TextDecoder().decode(f.data))
      .join("");
    expect(text === expected).toBe(true);
    session.close();
  }, 30_000);
});
