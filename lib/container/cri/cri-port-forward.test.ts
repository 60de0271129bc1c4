// The CRI port forward client against a stand-in streaming server speaking websocket.go's protocol as containerd's
// does: the port on both channels first, then data on channel 0, and a failure's text on channel 1.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Hono } from "hono";
import { serve } from "../../platform/serve.ts";
import type { RunningServer } from "../../platform/types.ts";
import { upgradeToWebSocket } from "../../platform/websocket.ts";
import { openPortForwardStream, SEND_BUFFER_HIGH_WATER } from "./cri-port-forward.ts";
import type { WebSocketConstructor } from "./cri-streaming.ts";

const app = new Hono();
app.get("/portforward/:token", (c) =>
  upgradeToWebSocket(new Response(null, { status: 501 }), {
    protocol: "v4.channel.k8s.io",
    open(socket) {
      void socket.send(new Uint8Array([0, 0x50, 0]));
      void socket.send(new Uint8Array([1, 0x50, 0]));
      if (c.req.param("token") === "refused") {
        void socket.send(
          new Uint8Array([1, ...new TextEncoder().encode("dial tcp4 127.0.0.1:80: connection refused")]),
        );
        socket.close(1000);
      } else
        this.message = (data) =>
          void socket.send(
            new Uint8Array([0, ...new TextEncoder().encode(new TextDecoder().decode(data.subarray(1)).toUpperCase())]),
          );
    },
    message() {},
    close() {},
  }),
);
let server: RunningServer;
beforeAll(async () => {
  server = await serve(app, { hostname: "127.0.0.1", port: 0 });
});
afterAll(() => server.stop());

describe("CRI port forward client", () => {
  test("the port prefixes are not data; bytes go out on channel 0 and come back from it", async () => {
    const stream = await openPortForwardStream(`http://127.0.0.1:${server.port}/portforward/ok`, { action: "forward" });
    await stream.write(new TextEncoder().encode("abc"));
    let reply = "";
    for await (const chunk of stream.output) {
      reply += new TextDecoder().decode(chunk);
      if (reply.length >= 3) break;
    }
    stream.close();
    await stream.done;
    expect(reply).toBe("ABC");
  });

  test("the error channel's text fails the stream's done", async () => {
    const stream = await openPortForwardStream(`http://127.0.0.1:${server.port}/portforward/refused`, {
      action: "forward",
    });
    for await (const _ of stream.output);
    const failure = await stream.done.then(
      () => undefined,
      (error: Error) => error.message,
    );
    expect(failure).toBe("dial tcp4 127.0.0.1:80: connection refused");
  });

  test("a write waits while the socket's send buffer is above the high water mark, and resumes once it drains", async () => {
    // A runtime socket whose buffer the test controls: the pod is not reading until the test says so.
    let buffered = SEND_BUFFER_HIGH_WATER + 1;
    let looks = 0;
    const sent: Uint8Array[] = [];
    let socket!: { onopen: () => void };
    class HeldSocket {
      readonly OPEN = 1;
      readyState = 1;
      binaryType = "blob";
      onopen = () => {};
      constructor() {
        socket = this;
        queueMicrotask(() => this.onopen());
      }
      get bufferedAmount() {
        looks++;
        return buffered;
      }
      send(frame: Uint8Array) {
        sent.push(frame);
      }
      close() {}
    }
    const stream = await openPortForwardStream("http://127.0.0.1:1/portforward/held", {
      action: "forward",
      webSocket: HeldSocket as unknown as WebSocketConstructor,
    });
    expect(socket).toBeDefined();
    let written = false;
    const write = stream.write(new TextEncoder().encode("abc")).then(() => (written = true));
    while (looks < 3) await new Promise((resume) => setTimeout(resume, 1));
    expect(sent).toHaveLength(1);
    expect(written).toBe(false);
    buffered = 0;
    await write;
    expect(written).toBe(true);
    stream.close();
  });
});
