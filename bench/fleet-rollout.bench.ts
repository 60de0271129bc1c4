// Fleet rollouts at scale (issue 40): hollow nodes (real kubelets over the in-memory runtime, in
// --processes child processes) on a three-member etcd on loopback, one pod placed on every node with
// `kubelet fleet apply --all-nodes`, then the compiled `kubelet fleet rollout` in batches of 10 %: a good
// change (wall time, per batch), and a bad one (a readiness probe nothing answers: never Ready, so the
// batch fails at --progress-deadline 15 s; the in-memory runtime pulls every image, so a missing image
// cannot be shown here: test/e2e/fleet-rollout.test.ts shows it on Docker and containerd), with the nodes
// that ever ran the bad manifest counted from a watch on the nodes' revisions records.
// Usage: bun build.ts && bun bench/fleet-rollout.bench.ts [--nodes 1000] [--processes 4] [--svg bench/fleet-rollout.svg]
import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { join } from "node:path";
import { createEtcdClient, type EtcdClient } from "../lib/sources/etcd-client.ts";
import { startEtcdCluster } from "../lib/testing/etcd-cluster.ts";
import { startHollowProcesses } from "../lib/testing/hollow-processes.ts";
import { KUBELET_BINARY } from "../lib/testing/services.ts";
import { removeDir, tempDir } from "../test/e2e/harness.ts";
import { machine } from "./support.ts";

const arg = (name: string, fallback: string) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1]! : fallback;
};
const nodes = Number(arg("--nodes", "1000"));
const processes = Number(arg("--processes", "4"));

const manifest = (dir: string, version: string, env: Record<string, unknown>, probe?: Record<string, unknown>) => {
  const file = join(dir, `${version}.json`);
  writeFileSync(
    file,
    JSON.stringify({
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name: "agent" },
      spec: {
        containers: [
          {
            name: "app",
            image: "local/busybox:stable",
            env: [{ name: "VERSION", ...env }],
            ...(probe ? { readinessProbe: probe } : {}),
          },
        ],
      },
    }),
  );
  return file;
};

/** Nodes whose revisions record says they run `hash` (any hash when undefined) and whose pod is Ready. */
async function readyAt(client: EtcdClient, hash?: string): Promise<number> {
  const revisions = (await client.list("/registry/hosts/", { serializable: true })).entries;
  const running = new Map<string, string>();
  const ready = new Set<string>();
  for (const e of revisions) {
    const [, , , node, kind] = e.key.split("/");
    if (kind === "revisions") running.set(node!, JSON.parse(e.value)["default/agent"]);
    if (kind === "status" && e.key.endsWith("/default/agent"))
      if (
        JSON.parse(e.value).conditions?.some(
          (c: { type: string; status: string }) => c.type === "Ready" && c.status === "True",
        )
      )
        ready.add(node!);
  }
  return [...ready].filter((n) => (hash ? running.get(n) === hash : running.has(n))).length;
}

function timed(args: string[]) {
  const started = performance.now();
  const run = spawnSync(KUBELET_BINARY, args, { encoding: "utf8", maxBuffer: 1 << 26 });
  return { code: run.status, stdout: run.stdout, stderr: run.stderr, seconds: (performance.now() - started) / 1000 };
}

/** Seconds per batch from the rollout's lines ("batch 3/10: 100/100 nodes Ready in 2.1s"). */
const batchSeconds = (stdout: string, prefix = "batch") =>
  [...stdout.matchAll(new RegExp(`^${prefix} \\d+/\\d+: .* in ([\\d.]+)s$`, "gm"))].map((m) => Number(m[1]));

/** Cumulative seconds at the end of each batch of the good rollout. */
export function rolloutSvg(perBatch: number[], title: string): string {
  const width = 800;
  const height = 300;
  const pad = 60;
  const cumulative = perBatch.reduce<number[]>((acc, s) => [...acc, (acc.at(-1) ?? 0) + s], []);
  const max = Math.max(1, ...cumulative) * 1.1;
  const x = (i: number) => pad + ((width - 2 * pad) * (i + 1)) / perBatch.length;
  const y = (v: number) => height - pad - ((height - 2 * pad) * v) / max;
  const points = cumulative.map((v, i) => `${x(i).toFixed(1)},${y(v).toFixed(1)}`);
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="sans-serif" font-size="12">
<rect width="100%" height="100%" fill="white"/>
<line x1="${pad}" y1="${height - pad}" x2="${width - pad}" y2="${height - pad}" stroke="black"/>
<line x1="${pad}" y1="${pad}" x2="${pad}" y2="${height - pad}" stroke="black"/>
${cumulative.map((_, i) => `<text x="${x(i).toFixed(1)}" y="${height - pad + 15}" text-anchor="middle">${i + 1}</text>`).join("")}
<text x="${width / 2}" y="${height - 15}" text-anchor="middle">${title}</text>
<text x="10" y="${pad - 15}" fill="#1f77b4">seconds since the rollout began, at the end of each batch (max ${cumulative.at(-1)?.toFixed(1)})</text>
<polyline fill="none" stroke="#1f77b4" stroke-width="2" points="${points.join(" ")}"/>
${cumulative.map((v, i) => `<circle cx="${x(i).toFixed(1)}" cy="${y(v).toFixed(1)}" r="3" fill="#1f77b4"/>`).join("")}
</svg>
`;
}

if (import.meta.main) {
  console.log(machine());
  let unhandled = 0;
  process.on("unhandledRejection", (error) => {
    if (unhandled++ < 5) console.error("unhandled rejection (a hollow kubelet would have crashed):", error);
  });
  const cluster = await startEtcdCluster(3);
  const client = createEtcdClient({ endpoints: cluster.endpoints });
  const dir = tempDir("bench-fleet-rollout");
  const etcd = ["--etcd_servers", cluster.endpoints.join(",")];
  const applied = timed(["fleet", "apply", "-f", manifest(dir, "v1", { value: "1" }), "--all-nodes", ...etcd]);
  if (applied.code !== 0) throw new Error(applied.stderr);
  const fleet = startHollowProcesses({ endpoints: cluster.endpoints, rootDir: dir, prefix: "roll-", processes });
  await fleet.start(0, 0);
  const startedAt = performance.now();
  for (let first = 0; first < nodes; first += 50) {
    await fleet.start(first, Math.min(50, nodes - first));
    while ((await readyAt(client).catch(() => 0)) < Math.min(nodes, first + 50)) await Bun.sleep(2000);
  }
  const upS = (performance.now() - startedAt) / 1000;
  console.log(`${nodes} nodes up, the pod Ready on each, in ${upS.toFixed(0)} s`);
  await Bun.sleep(5000);

  const loadGood = loadavg()[0]!;
  const rollout = (file: string, deadline: string) =>
    timed([
      "fleet",
      "rollout",
      "agent",
      "-f",
      file,
      "--max-unavailable",
      "10%",
      "--progress-deadline",
      deadline,
      ...etcd,
    ]);
  const good = rollout(manifest(dir, "v2", { value: "2" }), "120");
  console.log(good.stdout, good.stderr);
  const goodHash = /manifest ([0-9a-f]{16})/.exec(good.stdout)?.[1];
  const goodReady = await readyAt(client, goodHash);
  // Every revisions record written from now on: which nodes ever ran the bad manifest.
  const from = (await client.get("/")).revision + 1;
  const ran = new Map<string, string>();
  const watch = await client.watch({ prefix: "/registry/hosts/" }, from, {
    put: (e) => e.key.endsWith("/revisions") && ran.set(`${e.key}\0${JSON.parse(e.value)["default/agent"]}`, e.key),
    delete: () => {},
  });
  const loadBad = loadavg()[0]!;
  const probe = { httpGet: { host: "127.0.0.1", port: 1, path: "/" }, periodSeconds: 1 };
  const bad = rollout(manifest(dir, "bad", { value: "bad" }, probe), "15");
  console.log(bad.stdout, bad.stderr);
  const badHash = /manifest ([0-9a-f]{16})/.exec(bad.stdout)?.[1];
  await Bun.sleep(3000);
  await watch.cancel();
  const everBad = new Set([...ran.keys()].filter((k) => k.endsWith(`\0${badHash}`)).map((k) => ran.get(k))).size;
  const backReady = await readyAt(client, goodHash);

  const perBatch = batchSeconds(good.stdout);
  writeFileSync(
    arg("--svg", join(import.meta.dir, "fleet-rollout.svg")),
    rolloutSvg(perBatch, `batch of the rollout (${nodes} hollow nodes, 10 % each)`),
  );
  const p = (xs: number[]) => xs.map((s) => s.toFixed(1)).join(", ");
  console.log(`| measure | ${nodes} hollow nodes |
| --- | --- |
| nodes up, pod Ready on each (s) | ${upS.toFixed(0)} |
| good rollout, 10 % batches: exit code / wall (s) / machine load | ${good.code} / ${good.seconds.toFixed(1)} / ${loadGood.toFixed(0)} |
| good rollout: seconds per batch | ${p(perBatch)} |
| good rollout: nodes Ready at the new manifest after | ${goodReady} |
| bad rollout: exit code / wall (s) / machine load | ${bad.code} / ${bad.seconds.toFixed(1)} / ${loadBad.toFixed(0)} |
| bad rollout: batches run / rollback batches | ${batchSeconds(bad.stdout).length} / ${batchSeconds(bad.stdout, "rollback batch").length} |
| bad rollout: nodes that ever ran the bad manifest | ${everBad} (${((100 * everBad) / nodes).toFixed(1)} %) |
| bad rollout: nodes Ready at the good manifest after | ${backReady} |`);
  await fleet.stop();
  client.close();
  await cluster.stop();
  removeDir(dir);
  process.exit(0);
}
