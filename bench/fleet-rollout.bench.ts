// Fleet rollouts at scale (issue 40): hollow nodes (real kubelets over the in-memory runtime, in
// --processes child processes) on a three-member etcd on loopback, one pod placed on every node with
// `kubelet fleet apply --all-nodes`, then the compiled `kubelet fleet rollout` in batches of 10 %: a good
// change (wall time, per batch), and a bad one (a readiness probe nothing answers: never Ready, so the
// batch fails at --progress-deadline 15 s; the in-memory runtime pulls every image, so a missing image
// cannot be shown here: test/e2e/fleet-rollout.test.ts shows it on Docker and containerd), with the nodes
// that ever ran the bad manifest counted from a watch on the nodes' revisions records; each once with
// --max-unavailable 10 % and once with --max-surge 10 % --max-unavailable 0, the nodes that ever had no
// Ready copy of the pod (the pod or its surge copy) counted from a watch on their status records.
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

/**
 * Watches every node's status records of the pod and its surge copies (agent-HASH) from now on: the nodes that were
 * ever seen without a Ready one, and the nodes that ever ran `hash` (the pod or a copy) by their revisions records.
 */
async function observe(client: EtcdClient) {
  const ready = new Map<string, Map<string, boolean>>();
  const isReady = (value?: string) =>
    value !== undefined &&
    JSON.parse(value).conditions?.some(
      (c: { type: string; status: string }) => c.type === "Ready" && c.status === "True",
    );
  const status = (key: string) => {
    const [, , , node, kind, , name] = key.split("/");
    return kind === "status" && name && (name === "agent" || name.startsWith("agent-"))
      ? { node: node!, name }
      : undefined;
  };
  const now = await client.list("/registry/hosts/");
  for (const e of now.entries) {
    const s = status(e.key);
    if (s) (ready.get(s.node) ?? ready.set(s.node, new Map()).get(s.node)!).set(s.name, isReady(e.value));
  }
  const gaps = new Set<string>();
  const ran = new Map<string, Set<string>>();
  const seen = (key: string, value?: string) => {
    if (key.endsWith("/revisions") && value) {
      const node = key.split("/")[3]!;
      for (const [pod, hash] of Object.entries(JSON.parse(value) as Record<string, string>))
        if (pod === "default/agent" || pod.startsWith("default/agent-"))
          ran.get(hash)?.add(node) ?? ran.set(hash, new Set([node]));
      return;
    }
    const s = status(key);
    if (!s) return;
    const pods = ready.get(s.node) ?? ready.set(s.node, new Map()).get(s.node)!;
    if (value === undefined) pods.delete(s.name);
    else pods.set(s.name, isReady(value));
    if (![...pods.values()].some(Boolean)) gaps.add(s.node);
  };
  const watch = await client.watch({ prefix: "/registry/hosts/" }, now.revision + 1, {
    put: (e) => seen(e.key, e.value),
    delete: (key) => seen(key),
  });
  return {
    gaps,
    ran: (hash: string | undefined) => (hash ? (ran.get(hash)?.size ?? 0) : 0),
    stop: () => watch.cancel(),
  };
}

/** Seconds per batch from the rollout's lines ("batch 3/10: 100/100 nodes Ready in 2.1s"). */
const batchSeconds = (stdout: string, prefix = "batch") =>
  [...stdout.matchAll(new RegExp(`^${prefix} \\d+/\\d+: .* in ([\\d.]+)s$`, "gm"))].map((m) => Number(m[1]));

/** Cumulative seconds at the end of each batch of the good rollouts, one line each. */
export function rolloutSvg(runs: Array<{ label: string; perBatch: number[] }>, title: string): string {
  const width = 800;
  const height = 300;
  const pad = 60;
  const colors = ["#1f77b4", "#d62728", "#2ca02c"];
  const lines = runs.map((r) => r.perBatch.reduce<number[]>((acc, s) => [...acc, (acc.at(-1) ?? 0) + s], []));
  const batches = Math.max(1, ...runs.map((r) => r.perBatch.length));
  const max = Math.max(1, ...lines.flat()) * 1.1;
  const x = (i: number) => pad + ((width - 2 * pad) * (i + 1)) / batches;
  const y = (v: number) => height - pad - ((height - 2 * pad) * v) / max;
  const ticks = Array.from({ length: batches }, (_, i) => i);
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="sans-serif" font-size="12">
<rect width="100%" height="100%" fill="white"/>
<line x1="${pad}" y1="${height - pad}" x2="${width - pad}" y2="${height - pad}" stroke="black"/>
<line x1="${pad}" y1="${pad}" x2="${pad}" y2="${height - pad}" stroke="black"/>
${ticks.map((i) => `<text x="${x(i).toFixed(1)}" y="${height - pad + 15}" text-anchor="middle">${i + 1}</text>`).join("")}
<text x="${width / 2}" y="${height - 15}" text-anchor="middle">${title}</text>
<text x="10" y="15">seconds since the rollout began, at the end of each batch</text>
${lines
  .map((cumulative, k) => {
    const color = colors[k % colors.length]!;
    const points = cumulative.map((v, i) => `${x(i).toFixed(1)},${y(v).toFixed(1)}`).join(" ");
    return `<text x="10" y="${32 + 15 * k}" fill="${color}">${runs[k]!.label} (max ${cumulative.at(-1)?.toFixed(1)})</text>
<polyline fill="none" stroke="${color}" stroke-width="2" points="${points}"/>
${cumulative.map((v, i) => `<circle cx="${x(i).toFixed(1)}" cy="${y(v).toFixed(1)}" r="3" fill="${color}"/>`).join("")}`;
  })
  .join("\n")}
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

  /**
   * The rollout, and `rollout resume` as an operator would run it while a CLI ended with the rollout under way (an
   * etcd error under this load): wall time and output summed, the resumes counted.
   */
  const rollout = async (file: string, deadline: string, batch: string[]) => {
    const run = timed(["fleet", "rollout", "agent", "-f", file, ...batch, "--progress-deadline", deadline, ...etcd]);
    let resumes = 0;
    const active = async () => {
      const { entry } = await client.get("/registry/rollouts/default/agent");
      return entry !== undefined && ["Progressing", "RollingBack"].includes(JSON.parse(entry.value).phase);
    };
    while (run.code !== 0 && run.code !== 3 && resumes < 3 && (await active())) {
      console.log(run.stdout, run.stderr);
      resumes++;
      const again = timed(["fleet", "rollout", "resume", "agent", ...etcd]);
      Object.assign(run, {
        code: again.code,
        stdout: run.stdout + again.stdout,
        stderr: run.stderr + again.stderr,
        seconds: run.seconds + again.seconds,
      });
    }
    return { ...run, resumes };
  };
  const probe = { httpGet: { host: "127.0.0.1", port: 1, path: "/" }, periodSeconds: 1 };
  /** A good rollout to `version` then a bad one (rolled back), each watched. */
  const measure = async (label: string, batch: string[], version: string) => {
    const goodWatch = await observe(client);
    const loadGood = loadavg()[0]!;
    const good = await rollout(manifest(dir, version, { value: version }), "120", batch);
    console.log(good.stdout, good.stderr);
    await Bun.sleep(3000);
    await goodWatch.stop();
    const goodHash = /manifest ([0-9a-f]{16})/.exec(good.stdout)?.[1];
    const goodReady = await readyAt(client, goodHash);
    const badWatch = await observe(client);
    const loadBad = loadavg()[0]!;
    const bad = await rollout(manifest(dir, `bad-${version}`, { value: "bad" }, probe), "15", batch);
    console.log(bad.stdout, bad.stderr);
    const badHash = /manifest ([0-9a-f]{16})/.exec(bad.stdout)?.[1];
    await Bun.sleep(3000);
    await badWatch.stop();
    return {
      label,
      good: {
        ...good,
        load: loadGood,
        perBatch: batchSeconds(good.stdout),
        ready: goodReady,
        gaps: goodWatch.gaps.size,
      },
      bad: {
        ...bad,
        load: loadBad,
        batches: batchSeconds(bad.stdout).length,
        rollbackBatches: batchSeconds(bad.stdout, "rollback batch").length,
        everBad: badWatch.ran(badHash),
        backReady: await readyAt(client, goodHash),
        gaps: badWatch.gaps.size,
      },
    };
  };
  const runs = [
    await measure("--max-unavailable 10%", ["--max-unavailable", "10%"], "v2"),
    await measure("--max-surge 10% --max-unavailable 0", ["--max-surge", "10%", "--max-unavailable", "0"], "v3"),
  ];
  writeFileSync(
    arg("--svg", join(import.meta.dir, "fleet-rollout.svg")),
    rolloutSvg(
      runs.map((r) => ({ label: r.label, perBatch: r.good.perBatch })),
      `batch of the rollout (${nodes} hollow nodes, 10 % each)`,
    ),
  );
  const p = (xs: number[]) => xs.map((s) => s.toFixed(1)).join(", ");
  const row = (name: string, cell: (r: (typeof runs)[number]) => string | number) =>
    `| ${name} | ${runs.map(cell).join(" | ")} |`;
  const pct = (n: number) => `${n} (${((100 * n) / nodes).toFixed(1)} %)`;
  console.log(
    [
      `| measure (${nodes} hollow nodes, nodes up in ${upS.toFixed(0)} s) | ${runs.map((r) => r.label).join(" | ")} |`,
      `| --- |${runs.map(() => " --- |").join("")}`,
      row(
        "good rollout: exit code / wall (s) / machine load / resumes",
        (r) => `${r.good.code} / ${r.good.seconds.toFixed(1)} / ${r.good.load.toFixed(0)} / ${r.good.resumes}`,
      ),
      row("good rollout: seconds per batch", (r) => p(r.good.perBatch)),
      row("good rollout: nodes Ready at the new manifest after", (r) => r.good.ready),
      row("good rollout: nodes ever without a Ready copy of the pod", (r) => pct(r.good.gaps)),
      row(
        "bad rollout: exit code / wall (s) / machine load / resumes",
        (r) => `${r.bad.code} / ${r.bad.seconds.toFixed(1)} / ${r.bad.load.toFixed(0)} / ${r.bad.resumes}`,
      ),
      row("bad rollout: batches run / rollback batches", (r) => `${r.bad.batches} / ${r.bad.rollbackBatches}`),
      row("bad rollout: nodes that ever ran the bad manifest (pod or copy)", (r) => pct(r.bad.everBad)),
      row("bad rollout: nodes ever without a Ready copy of the pod", (r) => pct(r.bad.gaps)),
      row("bad rollout: nodes Ready at the good manifest after", (r) => r.bad.backReady),
    ].join("\n"),
  );
  await fleet.stop();
  client.close();
  await cluster.stop();
  removeDir(dir);
  process.exit(0);
}
