import { afterEach, expect, test } from "bun:test";
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FakeClock } from "../../testing/fake-clock.ts";
import { backupName, createAuditLog } from "./audit-log.ts";
import type { AuditEvent } from "./event.ts";

const dirs: string[] = [];
const tempDir = () => {
  const dir = mkdtempSync(join(tmpdir(), "kubelet-audit-"));
  dirs.push(dir);
  return dir;
};
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const event = (auditID: string, padding = 0): AuditEvent => ({
  kind: "Event",
  apiVersion: "audit.k8s.io/v1",
  level: "Metadata",
  auditID,
  stage: "ResponseComplete",
  requestURI: "/run/default/web/app?cmd=" + "x".repeat(padding),
  verb: "create",
  user: { username: "alice", groups: ["ops"] },
  requestReceivedTimestamp: "2026-01-01T00:00:00.000000Z",
  stageTimestamp: "2026-01-01T00:00:00.000000Z",
});
const lines = (path: string) =>
  readFileSync(path, "utf8")
    .trim()
    .split("\n")
    .map((l) => (JSON.parse(l) as AuditEvent).auditID);

test("each event is one JSON line in a file only its owner may read or write, an existing file made 0600 too", async () => {
  const path = join(tempDir(), "audit.log");
  writeFileSync(path, "", { mode: 0o644 });
  const log = createAuditLog({ path }, { clock: new FakeClock() });
  log.write(event("a"));
  log.write(event("b"));
  await log.close();
  expect(lines(path)).toEqual(["a", "b"]);
  expect(statSync(path).mode & 0o777).toBe(0o600);
});

test("a file at its size limit is renamed with lumberjack's UTC timestamp, and only maxbackup backups are kept", async () => {
  const dir = tempDir();
  const path = join(dir, "audit.log");
  const clock = new FakeClock(Date.UTC(2026, 10, 28, 17, 5, 9, 42));
  // Each event is about 0.4 MB: two fit under 1 MB, the third rotates.
  const log = createAuditLog({ path, maxSizeMB: 1, maxBackups: 2 }, { clock });
  for (const id of ["1", "2", "3", "4", "5", "6", "7"]) {
    log.write(event(id, 400_000));
    await log.flush();
    clock.advance(1000);
  }
  await log.close();
  expect(backupName(path, Date.UTC(2026, 10, 28, 17, 5, 9, 42))).toBe(join(dir, "audit-2026-11-28T17-05-09.042.log"));
  const files = readdirSync(dir).sort();
  expect(files).toEqual(["audit-2026-11-28T17-05-13.042.log", "audit-2026-11-28T17-05-15.042.log", "audit.log"]);
  expect(lines(path)).toEqual(["7"]);
  expect(lines(join(dir, files[1]!))).toEqual(["5", "6"]);
  for (const file of files) expect(statSync(join(dir, file)).mode & 0o777).toBe(0o600);
});

test("events queued together are written together, split across a rotation without loss or reordering", async () => {
  const dir = tempDir();
  const path = join(dir, "audit.log");
  const log = createAuditLog({ path, maxSizeMB: 1 }, { clock: new FakeClock() });
  const ids = Array.from({ length: 12 }, (_, i) => String(i));
  for (const id of ids) log.write(event(id, 150_000));
  await log.close();
  const [backup] = readdirSync(dir).filter((f) => f !== "audit.log");
  expect([...lines(join(dir, backup!)), ...lines(path)]).toEqual(ids);
  expect(lines(join(dir, backup!))).toHaveLength(6);
});

test("backups older than maxage days are removed, by the time in their name", async () => {
  const dir = tempDir();
  const path = join(dir, "audit.log");
  const clock = new FakeClock(Date.UTC(2026, 10, 28));
  writeFileSync(join(dir, "audit-2026-11-20T00-00-00.000.log"), "old\n");
  writeFileSync(join(dir, "audit-2026-11-27T00-00-00.000.log"), "recent\n");
  writeFileSync(join(dir, "other-2026-11-01T00-00-00.000.log"), "not ours\n");
  writeFileSync(path, "x".repeat(1024 * 1024));
  const log = createAuditLog({ path, maxSizeMB: 1, maxAgeDays: 3 }, { clock });
  log.write(event("a"));
  await log.close();
  expect(readdirSync(dir).sort()).toEqual([
    "audit-2026-11-27T00-00-00.000.log",
    "audit-2026-11-28T00-00-00.000.log",
    "audit.log",
    "other-2026-11-01T00-00-00.000.log",
  ]);
});

test("the path - writes each event as a line to stdout", async () => {
  const written: string[] = [];
  const log = createAuditLog(
    { path: "-" },
    { clock: new FakeClock(), stdout: { write: (t: string) => written.push(t) } },
  );
  log.write(event("a"));
  await log.close();
  expect(written.map((l) => JSON.parse(l).auditID)).toEqual(["a"]);
  expect(written[0]!.endsWith("}\n")).toBe(true);
});

test("writing never waits, and events past the queue's bound are dropped and counted", async () => {
  const path = join(tempDir(), "audit.log");
  const warnings: string[] = [];
  const log = createAuditLog(
    { path, maxQueued: 2 },
    { clock: new FakeClock(), log: { warn: (m: string) => warnings.push(m) } as never },
  );
  // write() returns before anything reaches the file: four writes in one turn, two fit the queue.
  for (const id of ["a", "b", "c", "d"]) log.write(event(id));
  expect(log.dropped()).toBe(1);
  await log.close();
  expect(lines(path).length).toBe(3);
  expect(warnings).toHaveLength(1);
});
