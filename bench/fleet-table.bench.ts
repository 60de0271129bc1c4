// Fleet serve's pods Table in process (issue 40): the body of `kubectl get pods -A` over 30,000 pods as fleet serve
// holds them (the records fleet-serve.bench.ts writes, placed as fleet-pods.ts serves them, through the real pod
// cache), built today's way (podTable, then one JSON.stringify of the whole Table) against the kept rows
// (table-rows.ts: each pod's row rendered once, AGE and RESTARTS written per answer), in alternated rounds, with
// the clock moving between rounds; plus the extra heap and RSS the kept rows hold.
// Usage: bun bench/fleet-table.bench.ts [--pods 30000] [--rounds 6] [--include Metadata|Object|None]
import type { Pod } from "../lib/api/types.ts";
import { ANNOTATION } from "../lib/api/types.ts";
import { FLEET_PLACED } from "../lib/server/apiserver/fleet-pods.ts";
import { podTable, type IncludeObject } from "../lib/server/apiserver/table.ts";
import { createPodRows } from "../lib/server/apiserver/table-rows.ts";
import { createPodCache } from "../lib/server/apiserver/watch.ts";
import { etcdPodKey } from "../lib/sources/etcd.ts";
import { FakeClock } from "../lib/testing/fake-clock.ts";
import { manifest, status } from "./fleet-records.ts";
import { machine, percentile } from "./support.ts";

const arg = (name: string, fallback: string) =>
  process.argv.includes(name) ? process.argv[process.argv.indexOf(name) + 1]! : fallback;
const PODS = Number(arg("--pods", "30000"));
const ROUNDS = Number(arg("--rounds", "6"));
const INCLUDE = arg("--include", "Metadata") as IncludeObject;
const PER_NODE = 30;

/** Pod `i` as fleet serve's feed makes it: the placed manifest, the placement annotations, the node, the status. */
function served(i: number): Pod {
  const nodeName = `hollow-${Math.floor(i / PER_NODE)}`;
  const m = manifest(`pod-${i % PER_NODE}`);
  const annotations = {
    ...m.metadata.annotations,
    [FLEET_PLACED]: `default/${m.metadata.name}`,
    [ANNOTATION.source]: "etcd",
    [ANNOTATION.origin]: etcdPodKey(nodeName, "default", m.metadata.name),
  };
  // Each name is on every node, so fleet-pods.ts serves it as <name>-<node>.
  const name = `${m.metadata.name}-${nodeName}`;
  return {
    ...m,
    metadata: { ...m.metadata, name, annotations },
    spec: { ...m.spec, nodeName },
    status: status(i),
  } as unknown as Pod;
}

const heapMb = () => {
  Bun.gc(true);
  return process.memoryUsage().heapUsed / 2 ** 20;
};
const rssMb = () => {
  Bun.gc(true);
  return process.memoryUsage().rss / 2 ** 20;
};

console.log(machine());
const clock = new FakeClock(Date.now());
const feedPods = Array.from({ length: PODS }, (_, i) => served(i));
const cache = createPodCache({ pods: () => feedPods, version: () => 1, onChange: () => () => {} }, { clock });
const { revision, pods } = cache.list();
const metadata = { resourceVersion: String(revision) };

/** Today's path: the Table as objects, stringified whole (fleet-pod-list.ts before the kept rows). */
const before = (now: number) =>
  JSON.stringify({ ...podTable(pods, { now, include: INCLUDE, resourceVersion: metadata.resourceVersion }), metadata });

const heap0 = heapMb();
const rss0 = rssMb();
const rows = createPodRows();
const coldStart = performance.now();
const coldCpu = process.cpuUsage();
// Measured without the body kept: what stays is the rows alone.
const bodyBytes = rows.table(pods, { now: clock.now(), include: INCLUDE, metadata }).length;
const cold = { wall: performance.now() - coldStart, cpu: process.cpuUsage(coldCpu) };
const heap1 = heapMb();
const rss1 = rssMb();
if (rows.table(pods, { now: clock.now(), include: INCLUDE, metadata }) !== before(clock.now()))
  throw new Error("kept rows differ from podTable's JSON");
console.log(
  `${PODS} pods, includeObject=${INCLUDE}: body ${(bodyBytes / 1e6).toFixed(1)} MB; first answer from kept rows (renders every row) ${cold.wall.toFixed(0)} ms wall, ${((cold.cpu.user + cold.cpu.system) / 1000).toFixed(0)} ms CPU`,
);
console.log(`kept rows: +${(heap1 - heap0).toFixed(1)} MB heap, +${(rss1 - rss0).toFixed(1)} MB RSS (after GC)`);

const timings = { before: [] as number[], after: [] as number[], beforeCpu: [] as number[], afterCpu: [] as number[] };
for (let round = 0; round < ROUNDS; round++) {
  // The clock moves between rounds so AGE changes; both paths are checked to give the same bytes.
  await clock.advance(61_000);
  const now = clock.now();
  const order = round % 2 === 0 ? (["before", "after"] as const) : (["after", "before"] as const);
  const bodies: Record<string, string> = {};
  for (const which of order) {
    const cpu = process.cpuUsage();
    const start = performance.now();
    bodies[which] = which === "before" ? before(now) : rows.table(pods, { now, include: INCLUDE, metadata });
    timings[which].push(performance.now() - start);
    const used = process.cpuUsage(cpu);
    timings[which === "before" ? "beforeCpu" : "afterCpu"].push((used.user + used.system) / 1000);
  }
  if (bodies.before !== bodies.after) throw new Error(`round ${round}: kept rows differ from podTable's JSON`);
}
const median = (values: number[]) => percentile(values, 50);
console.log(`median of ${ROUNDS} alternated rounds (ms): wall / CPU`);
console.log(
  `  before (podTable + JSON.stringify): ${median(timings.before).toFixed(0)} / ${median(timings.beforeCpu).toFixed(0)}`,
);
console.log(
  `  after (kept rows joined):           ${median(timings.after).toFixed(0)} / ${median(timings.afterCpu).toFixed(0)}`,
);
console.log(
  `  ratio before ÷ after: wall ${(median(timings.before) / median(timings.after)).toFixed(1)}, CPU ${(median(timings.beforeCpu) / median(timings.afterCpu)).toFixed(1)}`,
);
console.log(
  `  all rounds before: ${timings.before.map((t) => t.toFixed(0)).join(" ")}; after: ${timings.after.map((t) => t.toFixed(0)).join(" ")}`,
);
cache.close();
