// Merge store throughput: SETs of 100 pods with one change (merges/s), and a SET of 10,000 pods
// in which one changed (p50/p95 over 50 runs), against the initial 10,000-pod SET.
// Usage: bun bench/store.bench.ts
import { cpus } from "node:os";
import { readManifests } from "../lib/api/manifest.ts";
import { createPodStore } from "../lib/sources/store.ts";
import type { Pod } from "../lib/api/types.ts";

const build = (n: number, changed = -1, version = 0): Pod[] =>
  readManifests(
    JSON.stringify(
      Array.from({ length: n }, (_, i) => ({
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name: `pod-${i}` },
        spec: {
          containers: [
            {
              name: "app",
              image: `busybox:${i === changed ? 100 + version : 1}`,
              ports: [{ containerPort: 8080 }],
              env: [{ name: "I", value: String(i) }],
            },
          ],
        },
      })),
    ),
    { source: "file", origin: "bench" },
  ).pods;

const pct = (values: number[], p: number) =>
  [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor((p / 100) * values.length))]!;

// SETs of 100 pods, one changed each time.
const small = createPodStore({ sources: ["file"] });
let emitted = 0;
small.subscribe(() => emitted++);
const variants = Array.from({ length: 50 }, (_, v) => build(100, v % 100, v));
small.apply("file", { pods: variants[0]!, rejected: [] });
const rounds = 2000;
let t0 = performance.now();
for (let i = 0; i < rounds; i++) small.apply("file", { pods: variants[i % variants.length]!, rejected: [] });
const mergesPerSecond = rounds / ((performance.now() - t0) / 1000);

// 10,000 pods.
const large = createPodStore({ sources: ["file"] });
const base = build(10_000);
t0 = performance.now();
large.apply("file", { pods: base, rejected: [] });
const initial = performance.now() - t0;
// The same 10,000 pods each time but pod-5000, whose image changes: what a source sends after one edit.
const edits = Array.from({ length: 50 }, (_, v) => build(5001, 5000, v + 1)[5000]!);
const times: number[] = [];
for (const edit of edits) {
  const pods = base.slice();
  pods[5000] = edit;
  t0 = performance.now();
  large.apply("file", { pods, rejected: [] });
  times.push(performance.now() - t0);
}
console.log(`machine: ${cpus().length} × ${cpus()[0]?.model}`);
console.log(
  `SET of 100 pods, one changed: ${Math.round(mergesPerSecond).toLocaleString("en")} merges/s (${emitted} updates emitted)`,
);
console.log(`initial SET of 10,000 pods (validates each): ${initial.toFixed(1)} ms`);
console.log(
  `SET of 10,000 pods, one changed: p50 ${pct(times, 50).toFixed(2)} ms, p95 ${pct(times, 95).toFixed(2)} ms (target < 10 ms) — ${((pct(times, 50) / initial) * 100).toFixed(1)}% of the initial SET`,
);
