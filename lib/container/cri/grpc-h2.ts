// gRPC calls (unary and server streams) over node:http2 on a unix socket: one HTTP/2 stream a call, each message
// behind a 5-byte length prefix, the status in the trailers. The CRI client's transport: grpc-js's channel, resolver,
// balancer and call stack cost the CRI's calls more CPU than the HTTP/2 stream itself (bench/results.md, issue 41).
import { type ClientHttp2Session, type ClientHttp2Stream, connect, constants } from "node:http2";
import { connect as netConnect, type Socket } from "node:net";

/** gRPC status codes (grpc's doc/statuscodes.md), the numbers grpc-js's `status` has. */
export const GrpcStatus = {
  OK: 0,
  CANCELLED: 1,
  UNKNOWN: 2,
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  NOT_FOUND: 5,
  ALREADY_EXISTS: 6,
  PERMISSION_DENIED: 7,
  RESOURCE_EXHAUSTED: 8,
  FAILED_PRECONDITION: 9,
  ABORTED: 10,
  OUT_OF_RANGE: 11,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAVAILABLE: 14,
  DATA_LOSS: 15,
  UNAUTHENTICATED: 16,
} as const;
const NAMES = Object.fromEntries(Object.entries(GrpcStatus).map(([name, code]) => [code, name]));

/** A call's failure, shaped as grpc-js's ServiceError (`code`, `details`, the message `14 UNAVAILABLE: …`). */
export class GrpcError extends Error {
  constructor(
    readonly code: number,
    readonly details: string,
  ) {
    super(`${code} ${NAMES[code] ?? "UNKNOWN"}: ${details}`);
  }
}

export interface GrpcCallOptions {
  /** Epoch milliseconds; none: no deadline. Sent as grpc-timeout and enforced here too. */
  deadline?: number;
  signal?: AbortSignal;
}

export interface GrpcChannel {
  /** One request, one answer: the answer's message bytes. */
  unary(method: string, request: Uint8Array, options?: GrpcCallOptions): Promise<Buffer>;
  /** A server stream: its messages until the server's OK status; another status is thrown. */
  serverStream(method: string, request: Uint8Array, options?: GrpcCallOptions): AsyncIterable<Buffer>;
  /** Connects now if not connected: fails as a call would when nothing answers. */
  ready(): Promise<void>;
  /** Calls in flight go on; later ones fail UNAVAILABLE. */
  close(): void;
}

export interface GrpcChannelOptions {
  /** The socket's path (no unix:// scheme). */
  path: string;
  /** A larger answer fails RESOURCE_EXHAUSTED, as grpc-js's grpc.max_receive_message_length. */
  maxReceiveMessageBytes: number;
}

/** grpc-js's HTTP status mapping (grpc's doc/http-grpc-status-mapping.md), for answers without a grpc-status. */
function httpStatusError(status: number): GrpcError {
  const code =
    status === 400
      ? GrpcStatus.INTERNAL
      : status === 401
        ? GrpcStatus.UNAUTHENTICATED
        : status === 403
          ? GrpcStatus.PERMISSION_DENIED
          : status === 404
            ? GrpcStatus.UNIMPLEMENTED
            : [429, 502, 503, 504].includes(status)
              ? GrpcStatus.UNAVAILABLE
              : GrpcStatus.UNKNOWN;
  return new GrpcError(code, `Received HTTP status code ${status}`);
}

/** The grpc-timeout header: at most 8 digits, in the finest unit that fits. */
export function grpcTimeout(ms: number): string {
  const whole = Math.max(1, Math.ceil(ms));
  if (whole < 1e8) return `${whole}m`;
  const seconds = Math.ceil(whole / 1000);
  return seconds < 1e8 ? `${seconds}S` : `${Math.min(99_999_999, Math.ceil(seconds / 3600))}H`;
}

const decodeMessage = (value: string): string => {
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
};

/** A stream's framed messages, read from its data chunks without copying a message that arrived whole. */
export function createFrameReader(maxBytes: number) {
  const parts: Buffer[] = [];
  let have = 0;
  let expected = -1;
  const take = (n: number): Buffer => {
    have -= n;
    const first = parts[0]!;
    if (first.length >= n) {
      if (first.length === n) parts.shift();
      else parts[0] = first.subarray(n);
      return first.subarray(0, n);
    }
    const out = Buffer.allocUnsafe(n);
    for (let filled = 0; filled < n; ) {
      const part = parts[0]!;
      const k = Math.min(part.length, n - filled);
      part.copy(out, filled, 0, k);
      filled += k;
      if (k === part.length) parts.shift();
      else parts[0] = part.subarray(k);
    }
    return out;
  };
  /** The messages the chunk completes; throws a GrpcError for a compressed or oversized one. */
  return (chunk: Buffer, out: Buffer[]): void => {
    parts.push(chunk);
    have += chunk.length;
    for (;;) {
      if (expected < 0) {
        if (have < 5) return;
        const header = take(5);
        // No grpc-accept-encoding is sent, so a server may not compress.
        if (header[0] !== 0)
          throw new GrpcError(GrpcStatus.INTERNAL, "Received a compressed message, but no encoding was asked for");
        expected = header.readUInt32BE(1);
        if (expected > maxBytes)
          throw new GrpcError(
            GrpcStatus.RESOURCE_EXHAUSTED,
            `Received message larger than max (${expected} vs ${maxBytes})`,
          );
      }
      if (have < expected) return;
      out.push(expected === 0 ? Buffer.alloc(0) : take(expected));
      expected = -1;
    }
  };
}

const frame = (message: Uint8Array): Buffer => {
  const out = Buffer.allocUnsafe(5 + message.length);
  out[0] = 0;
  out.writeUInt32BE(message.length, 1);
  out.set(message, 5);
  return out;
};

const cancelled = () => new GrpcError(GrpcStatus.CANCELLED, "Cancelled on client");
/** grpc-js's words, with the time since the call `began`: the operator sees which timeout was spent. */
const deadlineExceeded = (began: number) =>
  new GrpcError(GrpcStatus.DEADLINE_EXCEEDED, `Deadline exceeded after ${((Date.now() - began) / 1000).toFixed(3)}s`);
/** Calls `expire` with DEADLINE_EXCEEDED at the deadline (none: never). */
const deadlineTimer = (deadline: number | undefined, began: number, expire: (error: GrpcError) => void) =>
  deadline === undefined ? undefined : setTimeout(() => expire(deadlineExceeded(began)), deadline - Date.now());

interface CallSink {
  message(bytes: Buffer): void;
  /** The call's end: undefined for OK, else its error. */
  end(error: GrpcError | undefined): void;
}

/** A channel to one socket: one HTTP/2 connection, made on the first call and again after it is lost. */
export function createGrpcChannel(options: GrpcChannelOptions): GrpcChannel {
  let session: ClientHttp2Session | undefined;
  let connecting: Promise<ClientHttp2Session> | undefined;
  let active = 0;
  let closed = false;
  // Idle, the connection keeps no process alive (runonce exits): only calls in flight hold it. On the socket, not the
  // session: Bun's Http2Session.ref() after unref() left the socket unpolled, each call then waiting seconds.
  const holds = new WeakMap<ClientHttp2Session, (on: boolean) => void>();
  const hold = (s: ClientHttp2Session, on: boolean) => holds.get(s)?.(on);

  const drop = (s: ClientHttp2Session) => {
    if (session === s) session = undefined;
  };
  // A call is made only once the server's SETTINGS arrived: a peer that is not HTTP/2 (a Docker socket) then
  // fails the connection with "Protocol error" rather than cancelling a stream without a word.
  const open = (): Promise<ClientHttp2Session> =>
    (connecting ??= new Promise<ClientHttp2Session>((resolve, reject) => {
      let socket: Socket | undefined;
      const s = connect("http://localhost", { createConnection: () => (socket = netConnect(options.path)) });
      holds.set(s, (on) => void (on ? socket?.ref() : socket?.unref()));
      let settled = false;
      const fail = (error: Error | undefined) => {
        drop(s);
        if (settled) return;
        settled = true;
        connecting = undefined;
        s.destroy();
        reject(
          new GrpcError(GrpcStatus.UNAVAILABLE, error?.message ?? "Connection closed before the server's settings"),
        );
      };
      s.once("remoteSettings", () => {
        if (settled) return;
        settled = true;
        connecting = undefined;
        if (closed) {
          s.close();
          reject(new GrpcError(GrpcStatus.UNAVAILABLE, "Channel has been shut down"));
          return;
        }
        session = s;
        if (active === 0) hold(s, false);
        resolve(s);
      });
      s.on("error", (error) => fail(error));
      s.on("close", () => fail(undefined));
      // A server going away (containerd stopping) takes no new streams there: the next call connects anew.
      s.on("goaway", () => drop(s));
    }));

  const start = (
    s: ClientHttp2Session,
    method: string,
    request: Uint8Array,
    call: GrpcCallOptions,
    sink: CallSink,
    began: number,
  ) => {
    const headers: Record<string, string> = {
      ":method": "POST",
      ":path": method,
      "content-type": "application/grpc",
      te: "trailers",
    };
    if (call.deadline !== undefined) headers["grpc-timeout"] = grpcTimeout(call.deadline - Date.now());
    let stream: ClientHttp2Stream;
    try {
      stream = s.request(headers);
    } catch (error) {
      drop(s);
      sink.end(new GrpcError(GrpcStatus.UNAVAILABLE, (error as Error).message));
      return;
    }
    if (++active === 1) hold(s, true);
    let outcome: GrpcError | undefined;
    let ended = false;
    let status: GrpcError | null | undefined; // null: OK
    let httpStatus: number | undefined;
    let streamError: Error | undefined;
    const read = createFrameReader(options.maxReceiveMessageBytes);
    const messages: Buffer[] = [];
    const statusFrom = (h: Record<string, unknown>) => {
      const code = h["grpc-status"];
      if (code === undefined) return;
      const n = Number(code);
      status = n === GrpcStatus.OK ? null : new GrpcError(n, decodeMessage(String(h["grpc-message"] ?? "")));
    };
    const finish = (error: GrpcError | undefined) => {
      if (ended) return;
      ended = true;
      if (timer) clearTimeout(timer);
      call.signal?.removeEventListener("abort", cancel);
      if (--active === 0 && session === s) hold(s, false);
      sink.end(error);
    };
    const stop = (error: GrpcError) => {
      outcome ??= error;
      finish(error);
      if (!stream.closed) stream.close(constants.NGHTTP2_CANCEL);
    };
    const cancel = () => stop(cancelled());
    const timer = deadlineTimer(call.deadline, began, stop);
    if (call.signal?.aborted) cancel();
    else call.signal?.addEventListener("abort", cancel, { once: true });

    stream.on("response", (h) => {
      httpStatus = Number(h[":status"]);
      statusFrom(h); // a trailers-only answer carries its status in the headers
    });
    stream.on("data", (chunk: Buffer) => {
      if (ended) return;
      try {
        read(chunk, messages);
      } catch (error) {
        // An HTML error page parsed as a frame says less than its HTTP status.
        stop(httpStatus !== undefined && httpStatus !== 200 ? httpStatusError(httpStatus) : (error as GrpcError));
        return;
      }
      for (const m of messages) sink.message(m);
      messages.length = 0;
    });
    stream.on("trailers", (h) => statusFrom(h));
    // Every message has been handed on by the end of the data: with the trailers' status, the call is over.
    stream.on("end", () => {
      if (!ended && status !== undefined) finish(status ?? undefined);
    });
    stream.on("error", (error) => {
      streamError = error;
    });
    stream.on("close", () => {
      if (ended) return;
      if (status !== undefined) return finish(status ?? undefined);
      if (httpStatus !== undefined && httpStatus !== 200) return finish(httpStatusError(httpStatus));
      const code = stream.rstCode;
      if (code === constants.NGHTTP2_REFUSED_STREAM)
        return finish(new GrpcError(GrpcStatus.UNAVAILABLE, "Stream refused by server"));
      // A lost connection shows as a cancelled stream (Node and Bun synthesize NGHTTP2_CANCEL) or an error.
      if (streamError || code === constants.NGHTTP2_CANCEL || s.destroyed || s.closed) {
        drop(s);
        const why = streamError ? `: ${streamError.message}` : "";
        return finish(new GrpcError(GrpcStatus.UNAVAILABLE, `Connection dropped${why}`));
      }
      finish(
        new GrpcError(
          GrpcStatus.INTERNAL,
          `Received RST_STREAM with code ${code}${code === 0 ? " (Call ended without gRPC status)" : ""}`,
        ),
      );
    });
    stream.end(frame(request));
  };

  const begin = (method: string, request: Uint8Array, call: GrpcCallOptions, sink: CallSink) => {
    if (closed) return sink.end(new GrpcError(GrpcStatus.UNAVAILABLE, "Channel has been shut down"));
    const began = Date.now();
    if (call.deadline !== undefined && call.deadline <= began) return sink.end(deadlineExceeded(began));
    if (call.signal?.aborted) return sink.end(cancelled());
    if (session && !session.closed && !session.destroyed) return start(session, method, request, call, sink, began);
    // The deadline and the signal bound the connecting too.
    let waiting = true;
    const give = (error: GrpcError) => {
      if (!waiting) return;
      waiting = false;
      clearTimeout(timer);
      call.signal?.removeEventListener("abort", abort);
      sink.end(error);
    };
    const abort = () => give(cancelled());
    const timer = deadlineTimer(call.deadline, began, give);
    call.signal?.addEventListener("abort", abort, { once: true });
    open().then(
      (s) => {
        if (!waiting) return;
        waiting = false;
        clearTimeout(timer);
        call.signal?.removeEventListener("abort", abort);
        start(s, method, request, call, sink, began);
      },
      (error: GrpcError) => give(error),
    );
  };

  return {
    unary: (method, request, call = {}) =>
      new Promise<Buffer>((resolve, reject) => {
        let answer: Buffer | undefined;
        let count = 0;
        begin(method, request, call, {
          message: (bytes) => {
            answer = bytes;
            count++;
          },
          end: (error) => {
            if (error) reject(error);
            else if (count === 1) resolve(answer!);
            else
              reject(
                new GrpcError(
                  GrpcStatus.UNIMPLEMENTED,
                  count === 0 ? "No message received" : "Too many responses received",
                ),
              );
          },
        });
      }),
    serverStream: (method, request, call = {}) => ({
      async *[Symbol.asyncIterator]() {
        const queue: Buffer[] = [];
        let done = false;
        let failure: GrpcError | undefined;
        let wake: (() => void) | undefined;
        const stopped = new AbortController();
        const onAbort = () => stopped.abort();
        call.signal?.addEventListener("abort", onAbort, { once: true });
        begin(
          method,
          request,
          { deadline: call.deadline, signal: stopped.signal },
          {
            message: (bytes) => {
              queue.push(bytes);
              wake?.();
            },
            end: (error) => {
              done = true;
              failure = error;
              wake?.();
            },
          },
        );
        try {
          for (;;) {
            while (queue.length > 0) yield queue.shift()!;
            if (done) break;
            await new Promise<void>((resolve) => {
              wake = resolve;
            });
            wake = undefined;
          }
          if (failure) throw failure;
        } finally {
          call.signal?.removeEventListener("abort", onAbort);
          // A reader that stops early cancels the call.
          if (!done) stopped.abort();
        }
      },
    }),
    ready: async () => {
      if (closed) throw new GrpcError(GrpcStatus.UNAVAILABLE, "Channel has been shut down");
      if (!session || session.closed || session.destroyed) await open();
    },
    close: () => {
      closed = true;
      const s = session;
      session = undefined;
      // In-flight calls finish; the connection closes after them.
      s?.close();
    },
  };
}
