import { describe, expect, test } from "bun:test";
import type { EngineExec, EngineExecBody } from "./docker-engine.ts";
import type { HijackedStream } from "./docker-exec.ts";
import { createDockerExecSync, type ExecSyncEngine } from "./docker-exec-sync.ts";

/** Docker's multiplexed frame (a payload under 256 bytes): type, three zero bytes, big-endian size, payload. */
const frame = (stream: number, payload: string) => {
  const data = new TextEncoder().encode(payload);
  return new Uint8Array([stream, 0, 0, 0, 0, 0, 0, data.length, ...data]);
};

/**
 * A fake Engine whose exec writes `frames` then exits with `exitCode`, or, with `hang`, never ends until its socket
 * is destroyed. `created` records the exec bodies and `started` the start options.
 */
function fakeEngine(frames: Uint8Array[], exitCode = 0, { hang = false } = {}) {
  const created: EngineExecBody[] = [];
  const started: unknown[] = [];
  let running!: () => void;
  const isRunning = new Promise<void>((resolve) => (running = resolve));
  const state = { destroyed: false };
  let destroyed!: () => void;
  const gone = new Promise<void>((resolve) => (destroyed = resolve));
  const socket = Object.assign(
    (async function* () {
      running(); // the exec's output is being read
      for (const f of frames) yield f;
      if (hang) await gone;
    })(),
    { write: () => {}, end: () => {}, destroy: () => ((state.destroyed = true), destroyed()) },
  ) as unknown as HijackedStream;
  const exec: EngineExec = {
    start: async (options) => (started.push(options), socket),
    inspect: async () => ({ Running: false, ExitCode: exitCode }),
    resize: async () => {},
  };
  const engine: ExecSyncEngine = { createExec: async (_id, body) => (created.push(body), exec) };
  return { engine, created, started, state, isRunning };
}

describe("Docker blocking exec", () => {
  test("gathers stdout and stderr apart, then the exit code, asking for no stdin and no TTY", async () => {
    const { engine, created, started, state } = fakeEngine([frame(1, "out\n"), frame(2, "err\n"), frame(1, "more")], 3);
    const exec = createDockerExecSync({ timeoutMs: 1000 }, { engine });
    expect(await exec("abc", ["sh", "-c", "x"])).toEqual({ exitCode: 3, stdout: "out\nmore", stderr: "err\n" });
    expect(created).toEqual([{ Cmd: ["sh", "-c", "x"], AttachStdout: true, AttachStderr: true }]);
    expect(started).toEqual([{ stdin: false }]);
    expect(state.destroyed).toBe(true);
  });

  test("a command that outlives its timeout is ExecTimeout, and its stream is closed", async () => {
    const { engine, state } = fakeEngine([frame(1, "started\n")], 0, { hang: true });
    const exec = createDockerExecSync({ timeoutMs: 1000 }, { engine });
    await expect(exec("0123456789abcdef", ["sleep", "60"], { timeoutMs: 20 })).rejects.toMatchObject({
      code: "ExecTimeout",
      message: 'cannot exec ["sleep","60"] in container 0123456789ab: no exit within 20 ms',
    });
    expect(state.destroyed).toBe(true);
  });

  test("the caller's abort ends the exec with the caller's reason", async () => {
    const { engine, isRunning } = fakeEngine([], 0, { hang: true });
    const abort = new AbortController();
    const pending = createDockerExecSync({ timeoutMs: 1000 }, { engine })("abc", ["sleep", "60"], {
      signal: abort.signal,
    });
    await isRunning;
    abort.abort(new Error("probe stopped"));
    await expect(pending).rejects.toThrow("probe stopped");
  });

  test("an abort that lands between the exec's start and its first read ends it too, not at the command's exit", async () => {
    // The start call answers, then the caller gives up a few turns later: at some depth that is before the exec
    // listens for the abort, whatever the number of turns its awaits take.
    const later = (turns: number, then: () => void): void =>
      turns === 0 ? then() : queueMicrotask(() => later(turns - 1, then));
    for (let turns = 0; turns <= 12; turns++) {
      const { engine } = fakeEngine([], 0, { hang: true });
      const abort = new AbortController();
      const starting: ExecSyncEngine = {
        createExec: async (id, body, signal) => {
          const exec = await engine.createExec(id, body, signal);
          return {
            ...exec,
            start: async (options) => {
              const socket = await exec.start(options);
              later(turns, () => abort.abort(new Error(`probe stopped after ${turns} turns`)));
              return socket;
            },
          };
        },
      };
      const pending = createDockerExecSync({ timeoutMs: 1000 }, { engine: starting })("abc", ["sleep", "60"], {
        signal: abort.signal,
      });
      const stillRunning = new Promise((_, reject) =>
        setTimeout(() => reject(new Error("still running")), 1000).unref(),
      );
      await expect(Promise.race([pending, stillRunning])).rejects.toThrow(`probe stopped after ${turns} turns`);
    }
  });

  test("a probe's timeout also bounds setting the exec up", async () => {
    const engine: ExecSyncEngine = { createExec: () => new Promise<never>(() => {}) };
    const exec = createDockerExecSync({ timeoutMs: 30_000 }, { engine });
    await expect(exec("abc", ["true"], { timeoutMs: 10 })).rejects.toMatchObject({
      code: "RuntimeUnavailable",
      message: 'cannot exec ["true"] in container abc: the Docker Engine did not answer within 10 ms',
    });
  });
});
