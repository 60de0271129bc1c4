import { expect, test } from "bun:test";
import { CHANNEL, channelCodec, exitStatus, V1_PROTOCOL, V5_PROTOCOL } from "../../container/channel-protocol.ts";
import { isLongLived, longLived } from "../../platform/long-lived.ts";
import { upgradeToWebSocket, webSocketSessionOf, type ServerSocket } from "../../platform/websocket.ts";
import { watchBody, watchWebSocket, type StreamOutcome } from "./stream-end.ts";

/** A response upgrading to a session that, once open, sends `frames` and closes (or waits for the client). */
function upgrade(protocol: string, frames: Array<Uint8Array | string>, serverCloses = true) {
  const received: unknown[] = [];
  const response = upgradeToWebSocket(new Response("fallback", { status: 501 }), {
    protocol,
    open(socket) {
      for (const frame of frames) void socket.send(frame);
      if (serverCloses) socket.close(1000);
    },
    message: (data) => received.push(data),
    close: () => received.push("closed"),
  });
  return { response, received };
}
const socket = (): ServerSocket & { sent: unknown[] } => {
  const sent: unknown[] = [];
  return { sent, send: async (d) => void sent.push(d), close: () => sent.push("close") };
};

test("an exec's exit code is read from the Status its error channel sent when the stream closes", () => {
  const codec = channelCodec(V5_PROTOCOL);
  const { response } = upgrade(V5_PROTOCOL, [
    codec.encode(CHANNEL.stdout, new Uint8Array([104])),
    codec.status(exitStatus(3))!,
  ]);
  const outcomes: StreamOutcome[] = [];
  expect(watchWebSocket(response, (o) => outcomes.push(o))).toBe(true);
  const client = socket();
  webSocketSessionOf(response)!.open(client);
  webSocketSessionOf(response)!.close();
  expect(outcomes).toEqual([{ exitCode: 3 }]);
  // The client still gets every frame and the close.
  expect(client.sent).toHaveLength(3);
});

test("before v4 a success sends no status: a stream the server closed without one exited 0", () => {
  const { response } = upgrade(V1_PROTOCOL, []);
  const outcomes: StreamOutcome[] = [];
  watchWebSocket(response, (o) => outcomes.push(o));
  webSocketSessionOf(response)!.open(socket());
  expect(outcomes).toEqual([{ exitCode: 0 }]);
});

test("a stream the client closed first ends with no exit code and says so; messages still reach the session", () => {
  const { response, received } = upgrade(V5_PROTOCOL, [], false);
  const outcomes: StreamOutcome[] = [];
  watchWebSocket(response, (o) => outcomes.push(o));
  const session = webSocketSessionOf(response)!;
  session.open(socket());
  session.message(new Uint8Array([0, 1]));
  session.close();
  expect(received).toEqual([new Uint8Array([0, 1]), "closed"]);
  expect(outcomes).toEqual([{ error: "the client closed the stream" }]);
});

test("a response that is no upgrade is left alone", () => {
  expect(watchWebSocket(new Response("x"), () => {})).toBe(false);
});

test("a streamed body ends once read to its end, or when the client cancels it, and stays long-lived", async () => {
  const outcomes: StreamOutcome[] = [];
  const done = watchBody(longLived(new Response("line 1\n")), (o) => outcomes.push(o));
  expect(isLongLived(done)).toBe(true);
  expect(outcomes).toEqual([]);
  expect(await done.text()).toBe("line 1\n");
  expect(outcomes).toEqual([{}]);

  const endless = new ReadableStream<Uint8Array>({ pull: (c) => c.enqueue(new Uint8Array([65])) });
  const cancelled = watchBody(new Response(endless), (o) => outcomes.push(o));
  const reader = cancelled.body!.getReader();
  await reader.read();
  await reader.cancel();
  expect(outcomes).toEqual([{}, { error: "the client closed the stream" }]);
});
