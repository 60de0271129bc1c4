import { afterAll, describe, expect, test } from "bun:test";
import { createServer, type AddressInfo } from "node:net";
import { PassThrough } from "node:stream";
import { connectTcp, pipeStream } from "./port-forward-stream.ts";

// An upper-casing echo server that answers once the client's side ended.
const server = createServer({ allowHalfOpen: true }, (socket) => {
  let text = "";
  socket.on("data", (d) => (text += d));
  socket.on("end", () => socket.end(text.toUpperCase()));
});
await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
const port = (server.address() as AddressInfo).port;
afterAll(() => server.close());

describe("a port forward over TCP", () => {
  test("carries bytes both ways; the client's end of file reaches the server, which may still answer", async () => {
    const stream = await connectTcp("127.0.0.1", port, "on the host network");
    await stream.write(new TextEncoder().encode("hello"));
    stream.closeWrite();
    let reply = "";
    for await (const chunk of stream.output) reply += new TextDecoder().decode(chunk);
    await stream.done;
    expect(reply).toBe("HELLO");
  });

  test("a port nothing listens on is refused with the address named", async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const free = (closed.address() as AddressInfo).port;
    closed.close();
    const failure = await connectTcp("127.0.0.1", free, "on the host network").then(
      () => undefined,
      (error: Error & { code?: string }) => error,
    );
    expect(failure?.code).toBe("RuntimeError");
    expect(failure?.message).toStartWith(`failed to connect to 127.0.0.1:${free} on the host network: `);
  });

  test("a connection we close ourselves ends without an error", async () => {
    const stream = await connectTcp("127.0.0.1", port, "on the host network");
    stream.close();
    expect(await stream.done).toBeUndefined();
  });

  test("writes the pipe refuses wait for room, and leave no listeners behind once it comes", async () => {
    const input = new PassThrough({ highWaterMark: 1024 });
    const stream = pipeStream({ input, output: new PassThrough(), finished: Promise.resolve(), destroy: () => {} });
    const before = input.listenerCount("close") + input.listenerCount("drain");
    for (let i = 0; i < 50; i++) {
      const written = stream.write(new Uint8Array(4096));
      input.read();
      await written;
    }
    expect(input.listenerCount("close") + input.listenerCount("drain")).toBe(before);
  });
});
