import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { appendFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import { KubeletError } from "../../api/types.ts";
import type { ContainerDetails, ContainerSummary } from "../../container/runtime.ts";
import { silentLogger, type Logger } from "../../log.ts";
import { FakeClock } from "../../testing/fake-clock.ts";
import { createSharedListing, LOG_LISTING_MAX_AGE_MS } from "../../container/shared-listing.ts";
import {
  createContainerLogManager,
  logRotationPolicy,
  rotationTimestamp,
  type ContainerLogManagerDeps,
  type LogRotationPolicy,
} from "./container-log-manager.ts";

/** A CRI runtime's view of running containers, each writing to `<dir>/<id>.log`; reopen starts a new empty file. */
function stubRuntime(dir: string, ids: string[]) {
  const reopened: string[] = [];
  const refusing = new Set<string>();
  const inspected: string[] = [];
  let active = 0;
  let mostActive = 0;
  const runtime: ContainerLogManagerDeps["runtime"] = {
    listContainers: async () => ids.map((id) => ({ id, state: "CONTAINER_RUNNING" }) as ContainerSummary),
    inspectContainer: async (id) => {
      inspected.push(id);
      active++;
      mostActive = Math.max(mostActive, active);
      await new Promise((resolve) => setTimeout(resolve, 5));
      active--;
      return { id, logPath: join(dir, `${id}.log`) } as ContainerDetails;
    },
    reopenContainerLog: async (id) => {
      reopened.push(id);
      if (refusing.has(id)) throw new KubeletError("RuntimeError", "cannot ReopenContainerLog: not supported");
      writeFileSync(join(dir, `${id}.log`), "");
    },
  };
  return { runtime, ids, inspected, reopened, refusing, mostActive: () => mostActive };
}

describe("container log manager", () => {
  let dir: string;
  let clock: FakeClock;
  const policy = (p: Partial<LogRotationPolicy> = {}): LogRotationPolicy => ({
    maxSizeBytes: 100,
    maxFiles: 3,
    maxWorkers: 1,
    monitorIntervalMs: 10_000,
    ...p,
  });
  const write = (id: string, bytes: number) => appendFileSync(join(dir, `${id}.log`), "x".repeat(bytes));
  const files = () => readdirSync(dir).sort();

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "log-manager-"));
    clock = new FakeClock(Date.UTC(2026, 10, 25, 21, 30, 5));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  test("a log at containerLogMaxSize is renamed with a timestamp and the runtime reopens a new file at its path", async () => {
    const stub = stubRuntime(dir, ["a"]);
    write("a", 100);
    await createContainerLogManager(policy(), { runtime: stub.runtime, clock, log: silentLogger }).rotateOnce();
    expect(files()).toEqual(["a.log", "a.log.20261125-213005"]);
    expect(statSync(join(dir, "a.log")).size).toBe(0);
    expect(stub.reopened).toEqual(["a"]);
  });

  test("a log below containerLogMaxSize is left alone", async () => {
    const stub = stubRuntime(dir, ["a"]);
    write("a", 99);
    await createContainerLogManager(policy(), { runtime: stub.runtime, clock, log: silentLogger }).rotateOnce();
    expect(files()).toEqual(["a.log"]);
    expect(stub.reopened).toEqual([]);
  });

  test("containerLogMaxFiles files are kept in all, the rotated ones gzipped but the one renamed last", async () => {
    const stub = stubRuntime(dir, ["a"]);
    const manager = createContainerLogManager(policy({ maxFiles: 4 }), {
      runtime: stub.runtime,
      clock,
      log: silentLogger,
    });
    const stamps: string[] = [];
    for (let pass = 0; pass < 5; pass++) {
      write("a", 100 + pass);
      stamps.push(rotationTimestamp(clock.now()));
      await manager.rotateOnce();
      await clock.advance(10_000);
    }
    expect(files()).toEqual(["a.log", `a.log.${stamps[2]}.gz`, `a.log.${stamps[3]}.gz`, `a.log.${stamps[4]}`]);
    expect(gunzipSync(readFileSync(join(dir, `a.log.${stamps[2]}.gz`))).toString()).toBe("x".repeat(102));
    expect(statSync(join(dir, `a.log.${stamps[4]}`)).size).toBe(104);
  });

  test("leftovers of an interrupted compression are removed on the next rotation", async () => {
    const stub = stubRuntime(dir, ["a"]);
    writeFileSync(join(dir, "a.log.20261125-200000"), "old");
    writeFileSync(join(dir, "a.log.20261125-200000.gz"), "complete copy");
    writeFileSync(join(dir, "a.log.20261125-201000.tmp"), "cut short");
    write("a", 100);
    await createContainerLogManager(policy({ maxFiles: 5 }), {
      runtime: stub.runtime,
      clock,
      log: silentLogger,
    }).rotateOnce();
    expect(files()).toEqual(["a.log", "a.log.20261125-200000.gz", "a.log.20261125-213005"]);
  });

  test("a container whose runtime refuses the reopen gets its file back and is logged once, not retried", async () => {
    const stub = stubRuntime(dir, ["a", "b"]);
    stub.refusing.add("a");
    const warnings: string[] = [];
    const log: Logger = { ...silentLogger, warn: (m) => warnings.push(m) };
    const manager = createContainerLogManager(policy(), { runtime: stub.runtime, clock, log });
    write("a", 100);
    write("b", 100);
    await manager.rotateOnce();
    await clock.advance(10_000);
    await manager.rotateOnce();
    expect(files()).toEqual(["a.log", "b.log", "b.log.20261125-213005"]);
    expect(statSync(join(dir, "a.log")).size).toBe(100);
    expect(stub.reopened).toEqual(["a", "b"]);
    expect(warnings).toEqual([
      `cannot reopen the log of container a (${join(dir, "a.log")}): cannot ReopenContainerLog: not supported; its log is no longer rotated`,
    ]);
  });

  test("at most containerLogMaxWorkers containers are checked at once", async () => {
    const stub = stubRuntime(dir, ["a", "b", "c", "d", "e"]);
    for (const id of ["a", "b", "c", "d", "e"]) write(id, 1);
    await createContainerLogManager(policy({ maxWorkers: 2 }), {
      runtime: stub.runtime,
      clock,
      log: silentLogger,
    }).rotateOnce();
    expect(stub.mostActive()).toBe(2);
  });

  test("a running container's log path is asked of the runtime once, again only after it stopped running", async () => {
    const stub = stubRuntime(dir, ["a", "b"]);
    for (const id of ["a", "b"]) write(id, 1);
    const manager = createContainerLogManager(policy(), { runtime: stub.runtime, clock, log: silentLogger });
    await manager.rotateOnce();
    await manager.rotateOnce();
    stub.ids.splice(0, 1); // a stops
    await manager.rotateOnce();
    stub.ids.push("a"); // and is listed running again
    await manager.rotateOnce();
    expect(stub.inspected).toEqual(["a", "b", "a"]);
  });

  test("a log file that is gone (a reopen failed after the rename) is asked of the runtime again", async () => {
    const stub = stubRuntime(dir, ["a"]);
    await createContainerLogManager(policy(), { runtime: stub.runtime, clock, log: silentLogger }).rotateOnce();
    expect(stub.reopened).toEqual(["a"]);
    expect(files()).toEqual(["a.log"]);
  });

  test("takes the running containers from the runtime's last listing while current for the manager, and lists when older", async () => {
    const stub = stubRuntime(dir, ["listed"]);
    let lists = 0;
    const list = stub.runtime.listContainers;
    const shared = createSharedListing(clock);
    shared.recordContainers(shared.begin(), () => [
      { id: "kept", state: "CONTAINER_RUNNING" } as ContainerSummary,
      { id: "gone", state: "CONTAINER_EXITED" } as ContainerSummary,
    ]);
    const runtime: ContainerLogManagerDeps["runtime"] = {
      ...stub.runtime,
      listContainers: (options) => (lists++, list(options)),
      lastListing: (maxAgeMs) => shared.current(maxAgeMs),
    };
    const manager = createContainerLogManager(policy(), { runtime, clock, log: silentLogger });
    for (const id of ["kept", "gone", "listed"]) write(id, 100);
    await clock.advance(LOG_LISTING_MAX_AGE_MS);
    await manager.rotateOnce();
    expect([stub.inspected, lists]).toEqual([["kept"], 0]);
    await clock.advance(1);
    await manager.rotateOnce();
    expect([stub.inspected, lists]).toEqual([["kept", "listed"], 1]);
  });
});

describe("log rotation policy", () => {
  const defaults = {
    containerLogMaxSize: "10Mi",
    containerLogMaxFiles: 5,
    containerLogMaxWorkers: 1,
    containerLogMonitorInterval: 10_000,
  };

  test("the Go kubelet's defaults are 10 MiB, 5 files, 1 worker, every 10 s", () => {
    expect(logRotationPolicy(defaults)).toEqual({
      maxSizeBytes: 10 * 2 ** 20,
      maxFiles: 5,
      maxWorkers: 1,
      monitorIntervalMs: 10_000,
    });
  });

  test.each([
    [
      { containerLogMaxSize: "ten" },
      '--container_log_max_size (containerLogMaxSize): "ten" is not a positive quantity',
    ],
    [{ containerLogMaxFiles: 1 }, "--container_log_max_files (containerLogMaxFiles): must be greater than 1"],
    [{ containerLogMaxWorkers: 0 }, "--container_log_max_workers (containerLogMaxWorkers): must be greater than or"],
    [
      { containerLogMonitorInterval: 1000 },
      "--container_log_monitor_interval (containerLogMonitorInterval): must be a positive time duration greater than or equal to 3s",
    ],
  ])("refuses %j naming the flag and the field", (change, message) => {
    expect(() => logRotationPolicy({ ...defaults, ...change })).toThrow(message);
  });
});
