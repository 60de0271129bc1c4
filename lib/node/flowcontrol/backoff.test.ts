import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { silentLogger } from "../../log.ts";
import { FakeClock } from "../../testing/fake-clock.ts";
import { Backoff } from "./backoff.ts";
import { backoffFile } from "../state/backoff-file.ts";

describe("back-off kept in root_dir", () => {
  const dir = mkdtempSync(join(tmpdir(), "kubelet-backoff-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  test("a new back-off over the same file resumes the delays where the last one left them", async () => {
    const clock = new FakeClock();
    const file = backoffFile(join(dir, "a", "crashloop.json"), silentLogger);
    const before = new Backoff(10_000, 300_000, clock, file);
    before.next("pod/app");
    before.next("pod/app");
    before.next("other/app");
    before.reset("other/app");
    await file.flushed();
    await clock.advance(5000);
    const after = new Backoff(10_000, 300_000, clock, backoffFile(join(dir, "a", "crashloop.json"), silentLogger));
    expect(after.get("pod/app")?.delayMs).toBe(20_000);
    expect(after.remaining("pod/app")).toBe(15_000);
    expect(after.get("other/app")).toBeUndefined();
    expect(after.next("pod/app")).toBe(40_000);
  });

  test("entries idle for twice the longest delay are forgotten on load", async () => {
    const clock = new FakeClock();
    const file = backoffFile(join(dir, "b.json"), silentLogger);
    new Backoff(10_000, 300_000, clock, file).next("old");
    await file.flushed();
    await clock.advance(600_000);
    expect(
      new Backoff(10_000, 300_000, clock, backoffFile(join(dir, "b.json"), silentLogger)).get("old"),
    ).toBeUndefined();
  });

  test("writes are atomic and the last state wins when changes come faster than the disk", async () => {
    const clock = new FakeClock();
    const path = join(dir, "c.json");
    const file = backoffFile(path, silentLogger);
    const backoff = new Backoff(10_000, 300_000, clock, file);
    for (let i = 0; i < 50; i++) backoff.next(`k${i}`);
    await file.flushed();
    expect(Object.keys(JSON.parse(readFileSync(path, "utf8")))).toHaveLength(50);
  });

  test("a corrupt file starts empty instead of failing the kubelet", () => {
    const path = join(dir, "d.json");
    writeFileSync(path, "{not json");
    expect(new Backoff(10_000, 300_000, new FakeClock(), backoffFile(path, silentLogger)).get("x")).toBeUndefined();
  });
});

test("forgetting the keys that match saves once when any matched, and not at all when none did", () => {
  const saved: Array<Record<string, unknown>> = [];
  const backoff = new Backoff(10_000, 300_000, new FakeClock(), { load: () => ({}), save: (e) => saved.push(e) });
  backoff.next("web/app");
  backoff.next("web/sidecar");
  backoff.next("db/app");
  saved.length = 0;
  backoff.resetWhere((key) => key.startsWith("web/"));
  expect(saved.map((entries) => Object.keys(entries))).toEqual([["db/app"]]);
  backoff.resetWhere((key) => key.startsWith("cache/"));
  expect(saved).toHaveLength(1);
});
