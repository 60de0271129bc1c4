import { describe, expect, test } from "bun:test";
import { silentLogger } from "../../log.ts";
import { FakeClock } from "../../testing/fake-clock.ts";
import { createEventRecorder } from "../events/events.ts";
import { createOomParser, isSystemOom, parseKmsgRecord, watchSystemOoms } from "./oom-watcher.ts";

// Kernel lines as a 6.1 kernel prints them (from this machine's log), and a pre-4.19 one.
const GLOBAL = [
  "oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0,global_oom,task_memcg=/system.slice/backup.service,task=backup,pid=24543,uid=0",
  "Out of memory: Killed process 24543 (backup) total-vm:27601460kB, anon-rss:21253012kB, file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:42316kB oom_score_adj:0",
];
const AT_LIMIT = [
  "oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=c216,mems_allowed=0,oom_memcg=/kubepods/burstable/pod607f,task_memcg=/kubepods/burstable/pod607f/c216,task=sh,pid=18600,uid=0",
  "Memory cgroup out of memory: Killed process 18600 (sh) total-vm:26852kB, anon-rss:15232kB, file-rss:1516kB, shmem-rss:0kB, UID:0 pgtables:80kB oom_score_adj:999",
];
const SERVICE_AT_LIMIT = [
  "oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,mems_allowed=0,oom_memcg=/system.slice/app.service,task_memcg=/system.slice/app.service,task=app,pid=31,uid=0",
  "Memory cgroup out of memory: Killed process 31 (app) total-vm:1kB, anon-rss:1kB",
];
const IN_CONTAINER_GLOBAL = [
  "oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0,global_oom,task_memcg=/docker/4f1c9a,task=java,pid=777,uid=0",
  "Out of memory: Killed process 777 (java) total-vm:1kB, anon-rss:1kB",
];

describe("system OOM watcher", () => {
  test("a kill is read from the oom-kill line and the Killed process line after it", () => {
    const parse = createOomParser();
    expect(GLOBAL.map(parse)).toEqual([
      undefined,
      { pid: 24543, task: "backup", memcg: "/system.slice/backup.service", cgroupLimit: false },
    ]);
    expect(createOomParser()("Out of memory: Killed process 42 (old) total-vm:1kB")).toEqual({
      pid: 42,
      task: "old",
      memcg: "",
      cgroupLimit: false,
    });
  });

  test("only a machine-wide kill of a process outside containers is a system OOM", () => {
    const last = (lines: string[]) => lines.map(createOomParser()).at(-1)!;
    expect(isSystemOom(last(GLOBAL))).toBe(true);
    expect(isSystemOom(last(AT_LIMIT))).toBe(false);
    expect(isSystemOom(last(SERVICE_AT_LIMIT))).toBe(false);
    expect(isSystemOom(last(IN_CONTAINER_GLOBAL))).toBe(false);
  });

  test("records a SystemOOM node event for kills after its start, none for older records", async () => {
    const events = createEventRecorder();
    const record = (us: number, message: string) => `3,100,${us},-;${message}`;
    async function* records() {
      for (const line of GLOBAL) yield record(1_000_000, line); // before the watcher started
      for (const line of [...AT_LIMIT, ...IN_CONTAINER_GLOBAL, ...GLOBAL]) yield record(5_000_000, line);
    }
    await watchSystemOoms(
      { nodeName: "node-a", events, log: silentLogger, clock: new FakeClock(), records, uptimeSeconds: async () => 2 },
      new AbortController().signal,
    );
    expect(events.list().map((e) => [e.type, e.reason, e.message, e.involvedObject.kind, e.count])).toEqual([
      ["Warning", "SystemOOM", "System OOM encountered, victim process: backup, pid: 24543", "Node", 1],
    ]);
  });

  test("parses /dev/kmsg records", () => {
    expect(parseKmsgRecord("6,1234,2000768475,-;oom-kill:task=x\n SUBSYSTEM=memory")).toEqual({
      sinceBootUs: 2000768475,
      message: "oom-kill:task=x",
    });
  });
});
