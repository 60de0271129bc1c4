import { afterAll, afterEach, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type Http2Server, type ServerHttp2Stream, constants } from "node:http2";
import { createServer as createNetServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createFrameReader, createGrpcChannel, GrpcError, GrpcStatus, grpcTimeout } from "./grpc-h2.ts";

const dir = mkdtempSync(join(tmpdir(), "grpc-h2-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;
const servers: Array<Http2Server | Server> = [];
afterEach(() => {
  for (const s of servers.splice(0)) s.close();
});

const framed = (message: Buffer) => {
  const out = Buffer.alloc(5 + message.length);
  out.writeUInt32BE(message.length, 1);
  message.copy(out, 5);
  return out;
};

/** An h2c server on a fresh socket; `handle` answers each stream, given the request's headers and body. */
async function serve(
  handle: (stream: ServerHttp2Stream, headers: Record<string, unknown>, body: Buffer) => void,
  path = join(dir, `s${++n}.sock`),
) {
  const server = createServer();
  server.on("stream", (stream: ServerHttp2Stream, headers) => {
    const chunks: Buffer[] = [];
    stream.on("data", (c: Buffer) => chunks.push(c));
    stream.on("end", () => handle(stream, headers, Buffer.concat(chunks)));
    stream.on("error", () => {});
  });
  await new Promise<void>((resolve) => server.listen(path, resolve));
  servers.push(server);
  return { path, server };
}

const ok = (stream: ServerHttp2Stream, message: Buffer) => {
  stream.respond({ ":status": 200, "content-type": "application/grpc" }, { waitForTrailers: true });
  stream.on("wantTrailers", () => stream.sendTrailers({ "grpc-status": "0", "grpc-message": "" }));
  stream.end(framed(message));
};
const failure = (error: unknown) => error as GrpcError;
const channelOn = (path: string, max = 1024) => createGrpcChannel({ path, maxReceiveMessageBytes: max });

test("a unary call is one POST of the length-prefixed message with gRPC's headers; the answer's message resolves it", async () => {
  const seen: Array<Record<string, unknown>> = [];
  const { path } = await serve((stream, headers, body) => {
    seen.push({ ...headers, body: body.toString("hex") });
    ok(stream, Buffer.from("pong"));
  });
  const channel = channelOn(path);
  const answer = await channel.unary("/test.Svc/Ping", Buffer.from("ping"), { deadline: Date.now() + 5000 });
  expect(answer.toString()).toBe("pong");
  expect(seen[0]).toMatchObject({
    ":method": "POST",
    ":path": "/test.Svc/Ping",
    "content-type": "application/grpc",
    te: "trailers",
    body: framed(Buffer.from("ping")).toString("hex"),
  });
  expect(String(seen[0]!["grpc-timeout"])).toMatch(/^\d{1,4}m$/);
  channel.close();
});

test("a status in the trailers rejects with its code and its percent-decoded message", async () => {
  const { path } = await serve((stream) => {
    stream.respond({ ":status": 200, "content-type": "application/grpc" }, { waitForTrailers: true });
    stream.on("wantTrailers", () =>
      stream.sendTrailers({ "grpc-status": "5", "grpc-message": "container %22x%22 not found" }),
    );
    stream.end();
  });
  const channel = channelOn(path);
  const error = failure(await channel.unary("/test.Svc/Get", Buffer.alloc(0)).catch((e) => e));
  expect(error).toBeInstanceOf(GrpcError);
  expect({ code: error.code, details: error.details }).toEqual({
    code: GrpcStatus.NOT_FOUND,
    details: 'container "x" not found',
  });
  expect(error.message).toBe('5 NOT_FOUND: container "x" not found');
  channel.close();
});

test("a trailers-only answer (the status in the headers, no body) rejects with its code", async () => {
  const { path } = await serve((stream) => {
    stream.respond(
      { ":status": 200, "content-type": "application/grpc", "grpc-status": "12", "grpc-message": "unknown service" },
      { endStream: true },
    );
  });
  const channel = channelOn(path);
  const error = failure(
    await channel.unary("/runtime.v1.RuntimeService/GetContainerEvents", Buffer.alloc(0)).catch((e) => e),
  );
  expect({ code: error.code, details: error.details }).toEqual({
    code: GrpcStatus.UNIMPLEMENTED,
    details: "unknown service",
  });
  // The same on a server stream: its iteration throws the status.
  const stream = channel.serverStream("/runtime.v1.RuntimeService/GetContainerEvents", Buffer.alloc(0));
  const thrown = failure(
    await (async () => {
      for await (const _ of stream);
    })().catch((e) => e),
  );
  expect(thrown.code).toBe(GrpcStatus.UNIMPLEMENTED);
  channel.close();
});

test("an answer without grpc-status maps its HTTP status as gRPC does: 404 is UNIMPLEMENTED, 503 UNAVAILABLE", async () => {
  const { path } = await serve((stream, headers) => {
    stream.respond({ ":status": headers[":path"] === "/a/404" ? 404 : 503 }, { endStream: true });
  });
  const channel = channelOn(path);
  const codes = await Promise.all(
    ["/a/404", "/a/503"].map((p) =>
      channel.unary(p, Buffer.alloc(0)).catch((e) => [failure(e).code, failure(e).details]),
    ),
  );
  expect(codes).toEqual([
    [GrpcStatus.UNIMPLEMENTED, "Received HTTP status code 404"],
    [GrpcStatus.UNAVAILABLE, "Received HTTP status code 503"],
  ]);
  channel.close();
});

test("an OK status without a message is UNIMPLEMENTED 'No message received', as grpc-js says", async () => {
  const { path } = await serve((stream) => {
    stream.respond({ ":status": 200, "content-type": "application/grpc" }, { waitForTrailers: true });
    stream.on("wantTrailers", () => stream.sendTrailers({ "grpc-status": "0" }));
    stream.end();
  });
  const channel = channelOn(path);
  const error = failure(await channel.unary("/test.Svc/Empty", Buffer.alloc(0)).catch((e) => e));
  expect([error.code, error.details]).toEqual([GrpcStatus.UNIMPLEMENTED, "No message received"]);
  channel.close();
});

test("a call past its deadline fails DEADLINE_EXCEEDED after how long it waited, and the server sees its stream cancelled", async () => {
  let cancelled: Promise<number> | undefined;
  const { path } = await serve((stream) => {
    cancelled = new Promise((resolve) => stream.on("close", () => resolve(stream.rstCode)));
  });
  const channel = channelOn(path);
  const error = failure(
    await channel.unary("/test.Svc/Slow", Buffer.alloc(0), { deadline: Date.now() + 200 }).catch((e) => e),
  );
  expect([error.code, error.details]).toEqual([
    GrpcStatus.DEADLINE_EXCEEDED,
    expect.stringMatching(/^Deadline exceeded after 0\.(19|2)\d*s$/),
  ]);
  expect(await cancelled).toBe(constants.NGHTTP2_CANCEL);
  channel.close();
});

test("an aborted signal cancels the call: CANCELLED", async () => {
  const { path } = await serve(() => {});
  const channel = channelOn(path);
  const abort = new AbortController();
  const pending = channel.unary("/test.Svc/Slow", Buffer.alloc(0), { signal: abort.signal }).catch((e) => e);
  await channel.ready();
  abort.abort();
  expect(failure(await pending).code).toBe(GrpcStatus.CANCELLED);
  channel.close();
});

test("an answer larger than the receive limit fails RESOURCE_EXHAUSTED", async () => {
  const { path } = await serve((stream) => ok(stream, Buffer.alloc(2000)));
  const channel = channelOn(path, 1024);
  const error = failure(await channel.unary("/test.Svc/Big", Buffer.alloc(0)).catch((e) => e));
  expect([error.code, error.details]).toEqual([
    GrpcStatus.RESOURCE_EXHAUSTED,
    "Received message larger than max (2000 vs 1024)",
  ]);
  channel.close();
});

test("a server that goes away mid-call fails it UNAVAILABLE; the next call connects to the server started again", async () => {
  const first = await serve((stream) => stream.session?.destroy());
  const channel = channelOn(first.path);
  const error = failure(await channel.unary("/test.Svc/Gone", Buffer.alloc(0)).catch((e) => e));
  expect(error.code).toBe(GrpcStatus.UNAVAILABLE);
  // containerd restarted: the same socket path, a new server.
  first.server.close();
  rmSync(first.path, { force: true });
  await serve((stream) => ok(stream, Buffer.from("back")), first.path);
  expect((await channel.unary("/test.Svc/Again", Buffer.alloc(0))).toString()).toBe("back");
  channel.close();
});

test("no socket fails UNAVAILABLE naming connect ENOENT; a peer that is not HTTP/2 fails with Protocol error", async () => {
  const missing = channelOn(join(dir, "missing.sock"));
  const error = failure(await missing.unary("/test.Svc/X", Buffer.alloc(0)).catch((e) => e));
  expect(error.code).toBe(GrpcStatus.UNAVAILABLE);
  expect(error.details).toContain("ENOENT");
  const path = join(dir, `http1-${++n}.sock`);
  const http1 = createNetServer((socket) =>
    socket.once("data", () => socket.write("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")),
  );
  await new Promise<void>((resolve) => http1.listen(path, resolve));
  servers.push(http1);
  const docker = channelOn(path);
  const refused = failure(await docker.unary("/test.Svc/X", Buffer.alloc(0)).catch((e) => e));
  expect(refused.code).toBe(GrpcStatus.UNAVAILABLE);
  expect(refused.details).toMatch(/Protocol error/);
});

test("a server stream yields each message as it comes, then ends on OK; stopping early cancels it on the server", async () => {
  let cancelled: Promise<number> | undefined;
  const { path } = await serve((stream, headers) => {
    stream.respond({ ":status": 200, "content-type": "application/grpc" }, { waitForTrailers: true });
    stream.on("wantTrailers", () => stream.sendTrailers({ "grpc-status": "0" }));
    for (const m of ["a", "b", "c"]) stream.write(framed(Buffer.from(m)));
    if (headers[":path"] === "/test.Svc/Endless") {
      cancelled = new Promise((resolve) => stream.on("close", () => resolve(stream.rstCode)));
      return;
    }
    stream.end();
  });
  const channel = channelOn(path);
  const all: string[] = [];
  for await (const m of channel.serverStream("/test.Svc/Three", Buffer.alloc(0))) all.push(m.toString());
  expect(all).toEqual(["a", "b", "c"]);
  for await (const m of channel.serverStream("/test.Svc/Endless", Buffer.alloc(0))) if (m.toString() === "b") break;
  expect(await cancelled).toBe(constants.NGHTTP2_CANCEL);
  channel.close();
});

test("framing: a message split over chunks, several in one chunk and an empty one come out whole and in order", () => {
  const read = createFrameReader(100);
  const bytes = Buffer.concat([framed(Buffer.from("hello")), framed(Buffer.alloc(0)), framed(Buffer.from("world!"))]);
  const out: Buffer[] = [];
  for (const cut of [
    [0, 3],
    [3, 8],
    [8, 9],
    [9, bytes.length],
  ])
    read(bytes.subarray(cut[0], cut[1]), out);
  expect(out.map(String)).toEqual(["hello", "", "world!"]);
  expect(() => read(Buffer.from([1, 0, 0, 0, 1, 0]), [])).toThrow("compressed");
});

test("grpc-timeout is at most 8 digits in the finest unit that fits", () => {
  expect(grpcTimeout(0.2)).toBe("1m");
  expect(grpcTimeout(120_000)).toBe("120000m");
  expect(grpcTimeout(2e8)).toBe("200000S");
});
