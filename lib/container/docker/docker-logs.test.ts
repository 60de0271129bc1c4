import { describe, expect, test } from "bun:test";
import type { EngineContainerInspect, EngineStream } from "./docker-engine.ts";
import { createDockerLogs, type LogsEngine } from "./docker-logs.ts";
import { LABEL } from "../runtime.ts";

const bytes = (text: string) => new TextEncoder().encode(text);
const text = (chunks: Uint8Array[]) => new TextDecoder().decode(Buffer.concat(chunks));

/** Docker's multiplexed frame (a payload under 256 bytes): type, three zero bytes, big-endian size, payload. */
const frame = (stream: number, payload: string) => {
  const data = new TextEncoder().encode(payload);
  return new Uint8Array([stream, 0, 0, 0, 0, 0, 0, data.length, ...data]);
};

/** A stream that yields `chunks`, then stays open until destroyed (as a followed log or the event stream). */
function openStream(chunks: Uint8Array[], { close = false } = {}) {
  let destroyed!: () => void;
  const gone = new Promise<void>((resolve) => (destroyed = resolve));
  const state = { destroyed: false };
  const iterable = (async function* () {
    for (const chunk of chunks) yield chunk;
    if (!close) await gone;
  })();
  const stream: EngineStream = Object.assign(iterable, {
    destroy: () => ((state.destroyed = true), destroyed()),
  });
  return { stream, state };
}

/** A fake Engine whose container has a TTY or not and the log and events given; `calls` records each call. */
function fakeEngine(options: { tty?: boolean; log?: Uint8Array[]; events?: EngineStream }) {
  const calls: string[] = [];
  const engine: LogsEngine = {
    inspectContainer: async (id) =>
      (calls.push(`inspectContainer ${id}`), { Config: { Tty: options.tty ?? false } }) as EngineContainerInspect,
    readLogs: async (id, params) => (
      calls.push(`readLogs ${id} ${JSON.stringify(params)}`), Buffer.concat(options.log ?? [])
    ),
    followLogs: async (id) => (calls.push(`followLogs ${id}`), openStream(options.log ?? []).stream),
    events: async (filters) => (calls.push(`events ${filters.type}`), options.events ?? openStream([]).stream),
  };
  return { engine, calls };
}

const logsOf = (engine: LogsEngine) => createDockerLogs({ timeoutMs: 1000 }, { engine });

describe("Docker container logs", () => {
  test("a log read to its end is demultiplexed, stdout and stderr in order, with the options asked", async () => {
    const { engine, calls } = fakeEngine({ log: [frame(1, "out\n"), frame(2, "err\n")] });
    const chunks: Uint8Array[] = [];
    for await (const chunk of logsOf(engine).logs("abc", { tail: 10, timestamps: true })) chunks.push(chunk);
    expect(text(chunks)).toBe("out\nerr\n");
    expect(calls).toEqual([
      "inspectContainer abc",
      `readLogs abc ${JSON.stringify({ stdout: true, stderr: true, timestamps: true, tail: 10 })}`,
    ]);
  });

  test("a TTY container's log is raw", async () => {
    const { engine } = fakeEngine({ tty: true, log: [bytes("\u0001raw\r\n")] });
    const chunks: Uint8Array[] = [];
    for await (const chunk of logsOf(engine).logs("abc")) chunks.push(chunk);
    expect(text(chunks)).toBe("\u0001raw\r\n");
  });

  test("a followed log ends quietly when the caller aborts, and its stream is closed", async () => {
    const { stream, state } = openStream([frame(1, "one\n")]);
    const engine = { ...fakeEngine({}).engine, followLogs: async () => stream };
    const abort = new AbortController();
    const chunks: Uint8Array[] = [];
    for await (const chunk of logsOf(engine).logs("abc", { follow: true, signal: abort.signal })) {
      chunks.push(chunk);
      abort.abort();
    }
    expect(text(chunks)).toBe("one\n");
    expect(state.destroyed).toBe(true);
  });

  test("a log stream that breaks is the port's error naming the container", async () => {
    const broken = Object.assign(
      (async function* () {
        yield frame(1, "one\n");
        throw Object.assign(new Error("socket hang up"), { statusCode: 500 });
      })(),
      { destroy: () => {} },
    );
    const engine = { ...fakeEngine({}).engine, followLogs: async () => broken };
    const read = async () => {
      for await (const _ of logsOf(engine).logs("0123456789abcdef", { follow: true }));
    };
    await expect(read()).rejects.toMatchObject({
      code: "RuntimeError",
      message: "cannot read the logs of container 0123456789ab: socket hang up",
    });
  });
});

describe("the Docker event stream", () => {
  const die = {
    Type: "container",
    Action: "die",
    Actor: { ID: "abc", Attributes: { [LABEL.podUid]: "u" } },
    time: 1_700_000_000,
  };

  test("yields the lifecycle events, watching containers only, and ends quietly on abort", async () => {
    const { stream, state } = openStream([bytes(`${JSON.stringify(die)}\n`)]);
    const { engine, calls } = fakeEngine({ events: stream });
    const abort = new AbortController();
    const seen: string[] = [];
    for await (const event of logsOf(engine).events(abort.signal)) {
      seen.push(`${event.type} ${event.containerId} ${event.time}`);
      abort.abort();
    }
    expect(seen).toEqual(["ContainerDied abc 1700000000000"]);
    expect(calls).toEqual(["events container"]);
    expect(state.destroyed).toBe(true);
  });

  test("a stream the Engine closes throws RuntimeUnavailable after the events it carried", async () => {
    const { stream } = openStream([bytes(`${JSON.stringify(die)}\nnot json\n`)], { close: true });
    const seen: string[] = [];
    const consume = async () => {
      for await (const event of logsOf(fakeEngine({ events: stream }).engine).events(new AbortController().signal))
        seen.push(event.type);
    };
    await expect(consume()).rejects.toMatchObject({
      code: "RuntimeUnavailable",
      message: "cannot watch Docker events: the Docker Engine closed the event stream",
    });
    expect(seen).toEqual(["ContainerDied"]);
  });

  test("the stream reports itself open once the Engine answers and closed when it ends, for the PLEG's health", async () => {
    const { stream } = openStream([bytes(`${JSON.stringify(die)}\n`)], { close: true });
    const states: string[] = [];
    const logs = createDockerLogs(
      { timeoutMs: 1000, streaming: (on) => states.push(on ? "open" : "closed") },
      { engine: fakeEngine({ events: stream }).engine },
    );
    const consume = async () => {
      for await (const event of logs.events(new AbortController().signal)) states.push(event.type);
    };
    await expect(consume()).rejects.toMatchObject({ code: "RuntimeUnavailable" });
    expect(states).toEqual(["open", "ContainerDied", "closed"]);
  });
});
