// Source latency: a file edit → snapshot, and an etcd put → snapshot, p50/p95 over 50 changes each.
// Usage: bash scripts/services.sh up && bun bench/sources.bench.ts
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { createEtcdSource, etcdKeyFor } from "../lib/sources/etcd.ts";
import { createFileSource } from "../lib/sources/file.ts";
import type { PodSource, SourceSnapshot } from "../lib/sources/source.ts";
import { testServices } from "../lib/testing/services.ts";

const pct = (values: number[], p: number) =>
  [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor((p / 100) * values.length))]!;
const manifest = (i: number) =>
  JSON.stringify([
    {
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name: "bench" },
      spec: { containers: [{ name: "c", image: `busybox:${i}` }] },
    },
  ]);

async function measure(source: PodSource, change: (i: number) => Promise<void> | void): Promise<number[]> {
  let waiting: { image: string; resolve: () => void } | undefined;
  const stop = source.start((s: SourceSnapshot) => {
    if (waiting && s.pods[0]?.spec.containers[0]?.image === waiting.image) waiting.resolve();
  });
  await Bun.sleep(500);
  const times: number[] = [];
  for (let i = 1; i <= 50; i++) {
    const seen = new Promise<void>((resolve) => (waiting = { image: `busybox:${i}`, resolve }));
    const t0 = performance.now();
    await change(i);
    await seen;
    times.push(performance.now() - t0);
    await Bun.sleep(30);
  }
  await stop();
  return times;
}

const dir = mkdtempSync(join(tmpdir(), "kubelet-bench-file-"));
const file = await measure(createFileSource({ path: dir, checkFrequency: 20_000 }), (i) =>
  writeFileSync(join(dir, "bench.json"), manifest(i)),
);
rmSync(dir, { recursive: true, force: true });
console.log(`machine: ${cpus().length} × ${cpus()[0]?.model}`);
console.log(
  `file edit → snapshot: p50 ${pct(file, 50).toFixed(1)} ms, p95 ${pct(file, 95).toFixed(1)} ms (target p95 < 100 ms; the standalone kubelet's default re-list is 20 s)`,
);

const services = testServices();
if (services) {
  const key = etcdKeyFor("bench-node");
  const put = async (i: number) =>
    void (await fetch(`${services.etcd}/v3/kv/put`, {
      method: "POST",
      body: JSON.stringify({ key: btoa(key), value: btoa(manifest(i)) }),
    }));
  const etcd = await measure(createEtcdSource({ endpoints: [services.etcd], hostname: "bench-node" }), put);
  console.log(
    `etcd put → snapshot: p50 ${pct(etcd, 50).toFixed(1)} ms, p95 ${pct(etcd, 95).toFixed(1)} ms (target p95 < 100 ms; includes the put's own round trip)`,
  );
} else {
  console.log("etcd: skipped (bash scripts/services.sh up)");
}
