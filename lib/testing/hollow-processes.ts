// Hollow nodes over several processes: `processes` children of this runtime, each running
// startHollowFleet for its share of the nodes, so a large fleet uses every core and one process's event
// loop is not every node's queue. The parent asks over the children's stdin, one JSON line a request,
// and each child answers on stdout; bench/fleet-scale.bench.ts reads their CPU and RSS from /proc.
import { spawn, type ChildProcess } from "node:child_process";
import { createInterface } from "node:readline";
import { startHollowFleet, type HollowFleet, type HollowFleetOptions } from "./hollow-fleet.ts";

/** What every child gets; `first` and `count` come with each start. */
export type HollowProcessOptions = Omit<HollowFleetOptions, "first" | "count" | "labels">;

export interface HollowProcesses {
  /** The children's process ids. */
  pids: number[];
  /** Starts nodes `first` … `first + count - 1`, split in contiguous runs over the processes; (0, 0): none. */
  start(first: number, count: number): Promise<void>;
  /** Stops every node (each kubelet's SIGTERM path); resolves once the children have exited. */
  stop(): Promise<void>;
}

type Request = { start: { first: number; count: number } } | { stop: true };

/** One child: answers each request line with `{"done":true}` or `{"error":"…"}`. */
function ask(child: ChildProcess, lines: AsyncIterator<string>, request: Request): Promise<void> {
  child.stdin!.write(`${JSON.stringify(request)}\n`);
  return lines.next().then(({ value, done }) => {
    const answer = done
      ? { error: `hollow node process ${child.pid} ended` }
      : (JSON.parse(value) as { error?: string });
    if (answer.error) throw new Error(answer.error);
  });
}

/** Starts `processes` children (none of their nodes yet). */
export function startHollowProcesses(options: HollowProcessOptions & { processes: number }): HollowProcesses {
  const { processes, ...shared } = options;
  const children = Array.from({ length: processes }, () => {
    const child = spawn(process.execPath, [import.meta.path, JSON.stringify(shared)], {
      stdio: ["pipe", "pipe", "inherit"],
    });
    return { child, lines: createInterface({ input: child.stdout! })[Symbol.asyncIterator]() };
  });
  return {
    pids: children.map(({ child }) => child.pid!),
    async start(first, count) {
      const share = Math.ceil(count / processes);
      await Promise.all(
        children.map(({ child, lines }, i) => {
          const from = first + i * share;
          // Every child answers, with no nodes to start too: start(0, 0) waits until they are all up.
          return ask(child, lines, {
            start: { first: from, count: Math.max(0, Math.min(share, first + count - from)) },
          });
        }),
      );
    },
    async stop() {
      const exited = children.map(({ child }) =>
        child.exitCode !== null ? undefined : new Promise((resolve) => child.once("exit", resolve)),
      );
      await Promise.all(children.map(({ child, lines }) => ask(child, lines, { stop: true }).catch(() => {})));
      await Promise.all(exited);
    },
  };
}

/** The child: runs the nodes it is asked to until asked to stop. */
async function child(shared: HollowProcessOptions): Promise<void> {
  let unhandled = 0;
  process.on("unhandledRejection", (error) => {
    if (unhandled++ < 5) console.error("unhandled rejection (a hollow kubelet would have crashed):", error);
  });
  const fleets: HollowFleet[] = [];
  const answer = (body: object) => process.stdout.write(`${JSON.stringify(body)}\n`);
  for await (const line of createInterface({ input: process.stdin })) {
    const request = JSON.parse(line) as Request;
    try {
      if ("start" in request) fleets.push(await startHollowFleet({ ...shared, ...request.start }));
      else await Promise.all(fleets.map((f) => f.stop()));
      answer({ done: true });
    } catch (error) {
      answer({ error: (error as Error).message });
    }
    if ("stop" in request) break;
  }
  process.exit(0);
}

if (import.meta.main) await child(JSON.parse(process.argv[2]!) as HollowProcessOptions);
