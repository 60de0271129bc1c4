// A fleet for the rollout controller's tests: the in-memory etcd, a fake clock and simulated nodes that
// run whatever their keys hold (their own pods/ key over the every-node one, as the etcd source reads
// them, and a surge copy beside it; a start taking START_MS, image "missing" never starting, a pod listed in
// `crashes` crash-looping) and report back as kubelets do.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { readManifests } from "../api/manifest.ts";
import { ANNOTATION, type Pod } from "../api/types.ts";
import { fleetApply, type PlacementTarget } from "../cli/fleet-apply.ts";
import { type DriverOptions, driveRollout, type RolloutClient, type RolloutStrategy } from "../cli/fleet-rollout.ts";
import { startRollout } from "../cli/fleet-rollout-start.ts";
import { fleetKeys } from "../node/status/fleet-reporter.ts";
import { ETCD_DAEMONS, etcdPodKey, selectorMatches } from "../sources/etcd.ts";
import { FakeClock } from "./fake-clock.ts";
import { FakeEtcd } from "./fake-etcd.ts";

const dir = mkdtempSync(join(tmpdir(), "kubelet-rollout-"));
process.once("exit", () => rmSync(dir, { recursive: true, force: true }));

export const START_MS = 1500;
/** The pod web at `image`, as a manifest file of it reads (defaults applied). */
export const webPod = (image: string, name = "web"): Pod =>
  readManifests(
    JSON.stringify({
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name },
      spec: { containers: [{ name: "app", image }] },
    }),
    {
      source: "file",
      origin: `${name}.yaml`,
    },
  ).pods[0]!;

export const strategy = (over: Partial<RolloutStrategy> = {}): RolloutStrategy => ({
  maxUnavailable: "1",
  maxSurge: "0",
  minReadySeconds: 0,
  progressDeadlineSeconds: 60,
  onFailure: "rollback",
  revisionHistoryLimit: 10,
  ...over,
});

/**
 * Nodes that read their keys as the etcd source does (their own pods/ key over the every-node one) and report the
 * node record, the manifest they run and the pod's status: Ready START_MS after a change, never for image "missing".
 */
export function simulatedFleet(etcd: FakeEtcd, clock: FakeClock, names: string[], labels: Record<string, string> = {}) {
  const down = new Set<string>();
  /** "node:image" (any pod of web at that image on the node) or "node:image:name" (that pod only) that crash-loop. */
  const crashes = new Set<string>();
  /** node/pod → the manifest it runs, since when. */
  const seen = new Map<string, { hash: string; since: number; image: string }>();
  /** Nodes that ever ran each manifest hash. */
  const ran = new Map<string, Set<string>>();
  /** Most nodes seen with web not Ready at once, and with no Ready copy of web (web or its surge copy) at once. */
  let maxNotReady = 0;
  let maxWithoutReady = 0;
  const converge = () => {
    let notReady = 0;
    let withoutReady = 0;
    for (const node of names) {
      if (down.has(node)) {
        for (const key of [...etcd.data.keys()])
          if (key.includes(`/${node}/status/`) || key === fleetKeys.node(node) || key === fleetKeys.revisions(node))
            etcd.data.delete(key);
        continue;
      }
      etcd.data.set(fleetKeys.node(node), {
        value: JSON.stringify({
          metadata: { name: node, labels: { ...labels, "kubernetes.io/hostname": node } },
          status: { conditions: [{ type: "Ready", status: "True" }] },
        }),
        lease: "0",
        modRevision: etcd.revision,
      });
      const own = etcd.data.get(etcdPodKey(node, "default", "web"))?.value;
      const daemon = etcd.data.get(`${ETCD_DAEMONS}default/web`)?.value;
      const daemonPod = daemon ? (JSON.parse(daemon) as Pod) : undefined;
      const web = own
        ? (JSON.parse(own) as Pod)
        : daemonPod && selectorMatches(daemonPod.spec.nodeSelector, { ...labels, "kubernetes.io/hostname": node })
          ? daemonPod
          : undefined;
      // Other pods of the node's own keys: a surge copy of web beside it.
      const prefix = etcdPodKey(node, "default", "");
      const others = [...etcd.data.entries()]
        .filter(([key]) => key.startsWith(prefix) && key !== `${prefix}web`)
        .map(([, entry]) => JSON.parse(entry.value) as Pod);
      const pods = [...(web ? [web] : []), ...others];
      for (const [key] of seen)
        if (key.startsWith(`${node}/`) && !pods.some((p) => key === `${node}/${p.metadata.name}`)) seen.delete(key);
      const revisions: Record<string, string> = {};
      let anyReady = false;
      for (const pod of pods) {
        const name = pod.metadata.name;
        const hash = pod.metadata.annotations![ANNOTATION.manifestHash]!;
        const image = pod.spec.containers[0]!.image!;
        const before = seen.get(`${node}/${name}`);
        if (before?.hash !== hash) seen.set(`${node}/${name}`, { hash, since: clock.now(), image });
        const at = seen.get(`${node}/${name}`)!;
        if (name === "web") ran.get(hash)?.add(node) ?? ran.set(hash, new Set([node]));
        const crashing = crashes.has(`${node}:${image}`) || crashes.has(`${node}:${image}:${name}`);
        const started = image !== "missing" && !crashing && clock.now() - at.since >= START_MS;
        if (started) anyReady = true;
        if (!started && name === "web") notReady++;
        const status = started
          ? {
              phase: "Running",
              conditions: [{ type: "Ready", status: "True" }],
              containerStatuses: [
                { name: "app", containerID: `sim://${node}/${name}/${hash}`, ready: true, state: { running: {} } },
              ],
            }
          : {
              phase: "Pending",
              conditions: [{ type: "Ready", status: "False" }],
              containerStatuses: [
                {
                  name: "app",
                  ready: false,
                  state: {
                    waiting: {
                      reason:
                        image === "missing" ? "ErrImagePull" : crashing ? "CrashLoopBackOff" : "ContainerCreating",
                    },
                  },
                },
              ],
            };
        etcd.data.set(fleetKeys.status(node, "default", name), {
          value: JSON.stringify(status),
          lease: "0",
          modRevision: etcd.revision,
        });
        revisions[`default/${name}`] = hash;
      }
      if (pods.length === 0) continue;
      if (!anyReady) withoutReady++;
      etcd.data.set(fleetKeys.revisions(node), {
        value: JSON.stringify(revisions),
        lease: "0",
        modRevision: etcd.revision,
      });
    }
    maxNotReady = Math.max(maxNotReady, notReady);
    maxWithoutReady = Math.max(maxWithoutReady, withoutReady);
  };
  return {
    converge,
    down,
    crashes,
    ran,
    get maxNotReady() {
      return maxNotReady;
    },
    get maxWithoutReady() {
      return maxWithoutReady;
    },
    resetMax() {
      maxNotReady = 0;
      maxWithoutReady = 0;
    },
  };
}

/** A manifest file of web at `image`, its container given `extra` fields. */
export function file(image: string, extra: Record<string, unknown> = {}): string {
  const path = join(dir, `web-${image.replace(/\W/g, "_")}${Object.keys(extra).length ? "-extra" : ""}.yaml`);
  writeFileSync(
    path,
    JSON.stringify({
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name: "web" },
      spec: { containers: [{ name: "app", image, ...extra }] },
    }),
  );
  return path;
}

/** A fleet of `n` nodes with web placed on `target` at image v1, converged. */
export async function placed(n: number, target?: PlacementTarget) {
  const etcd = new FakeEtcd();
  const clock = new FakeClock();
  const names = Array.from({ length: n }, (_, i) => `node-${i}`);
  const fleet = simulatedFleet(etcd, clock, names);
  const sink = { write: () => true } as unknown as NodeJS.WritableStream;
  await fleetApply(file("v1"), target ?? { nodes: names }, {
    client: etcd,
    dryRun: false,
    out: sink,
    err: sink,
    allowPrivileged: false,
  });
  fleet.converge();
  await clock.advance(START_MS);
  fleet.converge();
  fleet.resetMax();
  const client = etcd as unknown as RolloutClient;
  return { etcd, clock, names, fleet, client };
}

/** Runs `work` while time passes in steps of 250 ms and the nodes converge after each. */
export async function run<T>(
  ctx: { clock: FakeClock; fleet: { converge(): void } },
  work: Promise<T>,
  limitMs = 600_000,
) {
  let done = false;
  let value: T | undefined;
  let failure: unknown;
  work.then(
    (v) => ((done = true), (value = v)),
    (e) => ((done = true), (failure = e)),
  );
  for (let t = 0; !done && t < limitMs; t += 250) {
    ctx.fleet.converge();
    await ctx.clock.advance(250);
    // A turn of the real event loop too: reading a manifest file is real I/O.
    await new Promise((resolve) => setImmediate(resolve));
  }
  if (failure) throw failure;
  if (!done) throw new Error("the driver did not return");
  return value as T;
}

export const hashOn = (etcd: FakeEtcd, node: string) =>
  JSON.parse(etcd.data.get(etcdPodKey(node, "default", "web"))!.value).metadata.annotations[ANNOTATION.manifestHash];

/** Begins a rollout of web at `image` by ann@ops; throws unless it started. */
export async function begin(
  ctx: Awaited<ReturnType<typeof placed>>,
  image: string,
  over: Partial<RolloutStrategy> = {},
) {
  const result = await startRollout(
    { client: ctx.client, clock: ctx.clock, who: "ann@ops", strategy: strategy(over) },
    webPod(image),
  );
  if (!("started" in result)) throw new Error(JSON.stringify(result));
  return result.started;
}

/** Drives the rollout of web (with `extra` options) while time passes and the nodes converge. */
export function drive(ctx: Awaited<ReturnType<typeof placed>>, extra: Partial<DriverOptions> = {}) {
  return run(ctx, driveRollout({ client: ctx.client, clock: ctx.clock, ...extra }, "default", "web"));
}
