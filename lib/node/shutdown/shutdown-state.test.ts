import { afterEach, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { silentLogger } from "../../log.ts";
import { createShutdownState, SHUTDOWN_STATE_FILE } from "./shutdown-state.ts";

const dir = mkdtempSync(join(tmpdir(), "shutdown-state-"));
const path = join(dir, SHUTDOWN_STATE_FILE);
afterEach(() => rmSync(path, { force: true }));

const recorder = (now: () => number) => {
  const times: Array<{ startSeconds?: number; endSeconds?: number }> = [];
  const state = createShutdownState(path, {
    metrics: { gracefulShutdown: (t) => void times.push(t) },
    now,
    log: silentLogger,
  });
  return { state, times };
};

test("a shutdown's start and end are stored as the Go kubelet's state file and set the two gauges", async () => {
  let now = Date.parse("2026-11-25T10:00:00Z");
  const { state, times } = recorder(() => now);
  await state.started();
  expect(JSON.parse(readFileSync(path, "utf8"))).toEqual({
    startTime: "2026-11-25T10:00:00.000Z",
    endTime: "0001-01-01T00:00:00Z",
  });
  now += 7_000;
  await state.ended();
  expect(JSON.parse(readFileSync(path, "utf8"))).toEqual({
    startTime: "2026-11-25T10:00:00.000Z",
    endTime: "2026-11-25T10:00:07.000Z",
  });
  const start = Date.parse("2026-11-25T10:00:00Z") / 1000;
  expect(times).toEqual([{ startSeconds: start, endSeconds: 0 }, { endSeconds: start + 7 }]);
});

test("after a restart the gauges say when the last shutdown ran; an unfinished one has no end", () => {
  writeFileSync(path, JSON.stringify({ startTime: "2026-11-25T10:00:00Z", endTime: "2026-11-25T10:00:07Z" }));
  const { state, times } = recorder(Date.now);
  state.restore();
  writeFileSync(path, JSON.stringify({ startTime: "2026-11-25T10:00:00Z", endTime: "0001-01-01T00:00:00Z" }));
  state.restore();
  rmSync(path);
  state.restore();
  const start = Date.parse("2026-11-25T10:00:00Z") / 1000;
  expect(times).toEqual([{ startSeconds: start, endSeconds: start + 7 }, { startSeconds: start }]);
});
