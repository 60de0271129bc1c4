// System OOM kills as node events (the Go kubelet's OOM watcher over cadvisor's oomparser): the
// kernel log (/dev/kmsg) is followed from now on; a kill whose victim is outside every container
// cgroup is a Warning "SystemOOM" on the node. Container kills are the runtime's (OOMKilled).
import { constants } from "node:fs";
import { open } from "node:fs/promises";
import type { Clock } from "../../clock.ts";
import type { Logger } from "../../log.ts";
import { nodeRef, type EventRecorder } from "../events/events.ts";

/** One OOM kill as the kernel reported it. */
export interface OomKill {
  pid: number;
  task: string;
  /** The victim's memory cgroup ("/" or a service's for a process outside containers); "" when not reported. */
  memcg: string;
  /** Whether the kill enforced a cgroup's limit (CONSTRAINT_MEMCG) rather than the machine running out. */
  cgroupLimit: boolean;
}

/**
 * Kernel messages → OOM kills. Kernels since 4.19 print an `oom-kill:` line (constraint, task_memcg) and
 * then `Killed process <pid> (<task>)`; older ones only the latter. The kill is reported at that line,
 * with what the line before it said.
 */
export function createOomParser(): (message: string) => OomKill | undefined {
  let context: { memcg: string; cgroupLimit: boolean } | undefined;
  return (message) => {
    const detail = /oom-kill:(.*)$/.exec(message);
    if (detail) {
      const fields = new Map(
        detail[1]!.split(",").map((pair) => [pair.slice(0, pair.indexOf("=")), pair.slice(pair.indexOf("=") + 1)]),
      );
      context = { memcg: fields.get("task_memcg") ?? "", cgroupLimit: fields.get("constraint") === "CONSTRAINT_MEMCG" };
      return undefined;
    }
    const killed = /Killed process (\d+) \(([^)]*)\)/.exec(message);
    if (!killed) return undefined;
    const kill = { pid: Number(killed[1]), task: killed[2]!, memcg: "", cgroupLimit: false, ...context };
    context = undefined;
    return kill;
  };
}

/** A system OOM: the machine ran out and the victim ran outside every container (Docker's or pod cgroups). */
export function isSystemOom(kill: OomKill): boolean {
  return !kill.cgroupLimit && !/\/docker[/-]|\/kubepods|docker-[0-9a-f]+\.scope/.test(kill.memcg);
}

/** A /dev/kmsg record: "priority,sequence,microseconds since boot,flags;message". */
export function parseKmsgRecord(record: string): { sinceBootUs: number; message: string } | undefined {
  const semi = record.indexOf(";");
  if (semi < 0) return undefined;
  const [, , us] = record.slice(0, semi).split(",");
  return { sinceBootUs: Number(us), message: record.slice(semi + 1).split("\n")[0]! };
}

export interface OomWatcherDeps {
  nodeName: string;
  events: EventRecorder;
  log: Logger;
  clock: Clock;
  /** Kernel records from boot on (default: /dev/kmsg); the watcher skips those older than its start. */
  records?: (signal: AbortSignal) => AsyncIterable<string>;
  /** Seconds since boot now (default: /proc/uptime). */
  uptimeSeconds?: () => Promise<number>;
}

/** Follows the kernel log until the signal aborts; an unreadable log (no root, no /dev/kmsg) is logged once. */
export async function watchSystemOoms(deps: OomWatcherDeps, signal: AbortSignal): Promise<void> {
  const startedUs = (await (deps.uptimeSeconds ?? procUptime)()) * 1e6;
  const parse = createOomParser();
  try {
    for await (const record of deps.records?.(signal) ?? kmsgRecords(deps.clock, signal)) {
      const parsed = parseKmsgRecord(record);
      if (!parsed || parsed.sinceBootUs < startedUs) continue;
      const kill = parse(parsed.message);
      if (!kill || !isSystemOom(kill)) continue;
      deps.events.record(
        nodeRef(deps.nodeName),
        "Warning",
        "SystemOOM",
        `System OOM encountered, victim process: ${kill.task}, pid: ${kill.pid}`,
      );
    }
  } catch (error) {
    if (!signal.aborted)
      deps.log.warn(`cannot follow the kernel log for system OOM kills: ${(error as Error).message}`);
  }
}

async function procUptime(): Promise<number> {
  const file = await open("/proc/uptime", "r");
  try {
    return Number((await file.readFile("utf8")).split(" ")[0]);
  } finally {
    await file.close();
  }
}

/** How often the kernel log is read for new records once it has none (a non-blocking read, one syscall). */
const KMSG_POLL_MS = 2000;

/**
 * /dev/kmsg gives one record per read. It is opened non-blocking and polled: a blocking read would hold a
 * thread-pool thread and keep the process alive after SIGTERM. A record overwritten before it was read
 * (EPIPE) is skipped.
 */
async function* kmsgRecords(clock: Clock, signal: AbortSignal): AsyncIterable<string> {
  const file = await open("/dev/kmsg", constants.O_RDONLY | constants.O_NONBLOCK);
  const buffer = Buffer.alloc(8192);
  try {
    while (!signal.aborted) {
      try {
        const { bytesRead } = await file.read(buffer, 0, buffer.length, null);
        if (bytesRead === 0) return;
        yield buffer.subarray(0, bytesRead).toString("utf8");
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        if (code === "EAGAIN") await clock.sleep(KMSG_POLL_MS, signal).catch(() => {});
        else if (code !== "EPIPE") throw error;
      }
    }
  } finally {
    await file.close();
  }
}
