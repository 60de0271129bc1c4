import { describe, expect, test } from "bun:test";
import { KubeletError } from "../../api/types.ts";
import {
  createDockerStreaming,
  dockerStreamCalls,
  execExitCode,
  type DockerStreamCalls,
  type HijackedStream,
  type StreamEngine,
} from "./docker-exec.ts";
import type { EngineContainerInspect } from "./docker-engine.ts";
import type { OutputChunk, StreamSession } from "../runtime.ts";

const bytes = (text: string) => new TextEncoder().encode(text);

/** Docker's multiplexed frame: type, three zero bytes, big-endian size, payload. */
function dockerFrame(stream: number, text: string): Uint8Array {
  const payload = bytes(text);
  const frame = new Uint8Array(8 + payload.length);
  frame[0] = stream;
  new DataView(frame.buffer).setUint32(4, payload.length);
  frame.set(payload, 8);
  return frame;
}

/** A hijacked socket that delivers `chunks` (then fails with `failure`, if given) and records what was sent. */
function fakeSocket(chunks: Uint8Array[], failure?: Error) {
  const sent = { written: [] as string[], ended: false, destroyed: false };
  const socket: HijackedStream = {
    async *[Symbol.asyncIterator]() {
      for (const chunk of chunks) yield chunk;
      if (failure) throw failure;
    },
    write: (data) => sent.written.push(new TextDecoder().decode(data)),
    end: () => (sent.ended = true),
    destroy: () => (sent.destroyed = true),
  };
  return { socket, sent };
}

function calls(socket: HijackedStream, tty = false, exitCode = 0) {
  const created: unknown[] = [];
  const deps: DockerStreamCalls = {
    createExec: async (_id, config) => {
      created.push(config);
      return {
        start: async () => socket,
        inspect: async () => ({ Running: false, ExitCode: exitCode }),
        resize: async () => {},
      };
    },
    containerTty: async () => tty,
    attach: async () => socket,
    resizeContainer: async () => {},
    mapError: (error, action) => new KubeletError("RuntimeError", `cannot ${action}: ${(error as Error).message}`),
  };
  return { deps, created };
}

async function drain(session: StreamSession): Promise<Array<{ stream: number; text: string }>> {
  const out: Array<{ stream: number; text: string }> = [];
  for await (const chunk of session.output as AsyncIterable<OutputChunk>)
    out.push({ stream: chunk.stream, text: new TextDecoder().decode(chunk.data) });
  return out;
}

describe("Docker exec and attach streams", () => {
  test("a multiplexed exec stream comes out as stdout and stderr in order, frames split anywhere, then the exit code", async () => {
    const wire = new Uint8Array([...dockerFrame(1, "got hello\n"), ...dockerFrame(2, "err\n"), ...dockerFrame(1, "x")]);
    // Cut inside a header and inside a payload.
    const { socket } = fakeSocket([wire.slice(0, 5), wire.slice(5, 12), wire.slice(12, 22), wire.slice(22)]);
    const { deps, created } = calls(socket, false, 3);
    const session = await createDockerStreaming(deps).execStream("abc", ["sh"], {
      stdin: true,
      stdout: true,
      stderr: true,
    });
    expect(await drain(session)).toEqual([
      { stream: 1, text: "got hello\n" },
      { stream: 2, text: "err\n" },
      { stream: 1, text: "x" },
    ]);
    expect(await session.exit).toBe(3);
    expect(created).toEqual([{ cmd: ["sh"], stdin: true, stdout: true, stderr: true, tty: false }]);
  });

  test("with a TTY the stream is raw, all of it stdout, and stderr is not asked for", async () => {
    const { socket } = fakeSocket([bytes("\u0001prompt$ ")]);
    const { deps, created } = calls(socket);
    const session = await createDockerStreaming(deps).execStream("abc", ["sh"], {
      stdout: true,
      stderr: true,
      tty: true,
    });
    expect(await drain(session)).toEqual([{ stream: 1, text: "\u0001prompt$ " }]);
    expect(created).toEqual([{ cmd: ["sh"], stdin: false, stdout: true, stderr: false, tty: true }]);
  });

  test("stdin writes reach the hijacked socket and closing stdin half-closes it", async () => {
    const { socket, sent } = fakeSocket([]);
    const session = await createDockerStreaming(calls(socket).deps).execStream("abc", ["cat"], { stdin: true });
    session.write(bytes("one\n"));
    session.closeStdin();
    expect(sent).toEqual({ written: ["one\n"], ended: true, destroyed: false });
    session.close();
    expect(sent.destroyed).toBe(true);
  });

  test("a stream that breaks ends the output and rejects exit with the port's error naming the exec", async () => {
    const { socket } = fakeSocket([dockerFrame(1, "partial\n")], new Error("socket hang up"));
    const session = await createDockerStreaming(calls(socket).deps).execStream("abcdef", ["sh"], { stdout: true });
    expect(await drain(session)).toEqual([{ stream: 1, text: "partial\n" }]);
    await expect(session.exit).rejects.toThrow('cannot exec ["sh"] in container abcdef: socket hang up');
  });

  test("an attach has no exit code: it ends when the container's streams close", async () => {
    const { socket } = fakeSocket([dockerFrame(1, "line 0\n")]);
    const session = await createDockerStreaming(calls(socket).deps).attach("abc", { stdout: true });
    expect(await drain(session)).toEqual([{ stream: 1, text: "line 0\n" }]);
    expect(await session.exit).toBeUndefined();
  });

  test("the exit code is read once the exec stops running (it can trail the stream's end)", async () => {
    const answers = [
      { Running: true, ExitCode: null },
      { Running: true, ExitCode: null },
      { Running: false, ExitCode: 7 },
    ];
    expect(await execExitCode(async () => answers.shift()!)).toBe(7);
    expect(answers).toEqual([]);
  });
});

describe("the Engine calls of streamed exec and attach", () => {
  /** A fake Engine recording each call; its container has a TTY. */
  function fakeEngine() {
    const calls: unknown[] = [];
    const { socket } = fakeSocket([]);
    const engine: StreamEngine = {
      createExec: async (id, body) => {
        calls.push(["createExec", id, body]);
        return {
          start: async (options) => (calls.push(["start", options]), socket),
          inspect: async () => ({ Running: false, ExitCode: 0 }),
          resize: async (size) => calls.push(["resize exec", size]),
        };
      },
      inspectContainer: async (id) =>
        (calls.push(["inspectContainer", id]), { Config: { Tty: true } }) as EngineContainerInspect,
      attach: async (id, options) => (calls.push(["attach", id, options]), socket),
      resizeContainer: async (id, size) => calls.push(["resizeContainer", id, size]),
    };
    return { engine, calls };
  }

  test("an exec is created with the streams and TTY asked, started with stdin and the TTY, resized in w and h", async () => {
    const { engine, calls } = fakeEngine();
    const streams = dockerStreamCalls({ timeoutMs: 1000 }, { engine });
    const exec = await streams.createExec("abc", { cmd: ["sh"], stdin: true, stdout: true, stderr: false, tty: true });
    await exec.start({ stdin: true, tty: true });
    await exec.resize({ width: 80, height: 24 });
    expect(calls).toEqual([
      ["createExec", "abc", { Cmd: ["sh"], AttachStdin: true, AttachStdout: true, AttachStderr: false, Tty: true }],
      ["start", { stdin: true, tty: true }],
      ["resize exec", { w: 80, h: 24 }],
    ]);
  });

  test("an attach reads the container's TTY, attaches the streams asked and resizes the container", async () => {
    const { engine, calls } = fakeEngine();
    const streams = dockerStreamCalls({ timeoutMs: 1000 }, { engine });
    expect(await streams.containerTty("abc")).toBe(true);
    await streams.attach("abc", { stdin: false, stdout: true, stderr: true });
    await streams.resizeContainer("abc", { width: 100, height: 30 });
    expect(calls).toEqual([
      ["inspectContainer", "abc"],
      ["attach", "abc", { stdin: false, stdout: true, stderr: true }],
      ["resizeContainer", "abc", { w: 100, h: 30 }],
    ]);
  });

  test("a refused exec is the port's error naming the command and the container", async () => {
    const engine = {
      ...fakeEngine().engine,
      createExec: () => Promise.reject(Object.assign(new Error("is not running"), { statusCode: 409 })),
    };
    await expect(
      dockerStreamCalls({ timeoutMs: 1000 }, { engine }).createExec("0123456789abcdef", {
        cmd: ["sh"],
        stdin: false,
        stdout: true,
        stderr: true,
        tty: false,
      }),
    ).rejects.toMatchObject({
      code: "Conflict",
      message: 'cannot exec ["sh"] in container 0123456789ab: is not running',
    });
  });
});
