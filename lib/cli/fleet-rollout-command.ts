// `kubelet fleet rollout POD -f FILE | status | history | undo | pause | resume`: the command line as
// a request, the rollout driven or followed with its progress printed (redrawn on a terminal, one line
// per batch otherwise), and the exit code a script reads (ROLLOUT_EXIT).
import { readManifestFile } from "../api/manifest-files.ts";
import { DEFAULT_MAX_MANIFEST_BYTES } from "../api/manifest-text.ts";
import { readManifests } from "../api/manifest.ts";
import type { Pod } from "../api/types.ts";
import type { Clock } from "../clock.ts";
import { table } from "./fleet.ts";
import { noBatchTaken, ROLLOUT_EXIT, type RolloutRequest } from "./fleet-rollout-flags.ts";
import { surgeBlocker, type NodeVerdict } from "./fleet-rollout-plan.ts";
import {
  driveRollout,
  driverAlive,
  readRollout,
  type RolloutClient,
  type RolloutState,
  type RolloutStrategy,
  whoAmI,
} from "./fleet-rollout.ts";
import { pauseRollout, startRollout, unpauseRollout } from "./fleet-rollout-start.ts";
import { listRevisions } from "./fleet-revisions.ts";
import { manifestValid } from "./fleet-apply.ts";

export interface RolloutIo {
  out: NodeJS.WritableStream & { isTTY?: boolean };
  err: NodeJS.WritableStream;
}

/** The line a batch's end prints. */
function batchLine(state: RolloutState, r: RolloutState["results"][number]): string {
  const what = r.phase === "RollingBack" ? "rollback batch" : "batch";
  const unavailable = Object.entries(r.unavailable);
  const away = unavailable.length
    ? `, ${unavailable.length} unavailable (${unavailable
        .slice(0, 5)
        .map(([n, why]) => `${n} ${why}`)
        .join(", ")}${unavailable.length > 5 ? ", …" : ""})`
    : "";
  const verdict = r.result === "Ready" ? "Ready" : `FAILED (${r.reason})`;
  return `${what} ${r.index}/${r.of}: ${r.ready}/${r.nodes} nodes ${verdict}${away} in ${r.seconds}s\n`;
}

/** The line a rollout's end prints. */
function endLine(state: RolloutState, clockNow: number): string {
  const took = Math.round((state.updatedAt - state.startedAt) / 100) / 10;
  const pod = `${state.namespace}/${state.name}`;
  const nodes = state.batches.flat().length;
  switch (state.phase) {
    case "Complete":
      return `rollout of ${pod} complete: revision ${state.revision} on ${nodes} nodes in ${state.batches.length} batches (${took}s)\n`;
    case "RolledBack":
      return `rollout of ${pod} to revision ${state.updateRevision} rolled back to revision ${state.revision}: ${state.reason}: ${state.message}\n`;
    case "Paused":
      return `rollout of ${pod} paused at batch ${state.batch + 1}/${state.batches.length}${state.reason && state.reason !== "Paused" ? `: ${state.reason}: ${state.message}` : ""}; kubelet fleet rollout resume ${state.name} goes on, undo ${state.name} goes back\n`;
    case "Failed":
      return `rollout of ${pod} failed: ${state.reason}: ${state.message}\n`;
    default:
      return `rollout of ${pod} to revision ${state.revision}: ${state.phase}, batch ${state.batch + 1}/${state.batches.length} (${Math.round((clockNow - state.startedAt) / 1000)}s)\n`;
  }
}

const exitFor = (state: RolloutState): number =>
  state.phase === "Complete"
    ? ROLLOUT_EXIT.complete
    : state.phase === "RolledBack"
      ? ROLLOUT_EXIT.rolledBack
      : state.phase === "Paused"
        ? ROLLOUT_EXIT.paused
        : state.phase === "Failed"
          ? ROLLOUT_EXIT.failed
          : ROLLOUT_EXIT.undriven;

/** The live view on a terminal: the batch in hand with its nodes counted by verdict, and the batches done. */
function liveView(state: RolloutState, verdicts: Map<string, NodeVerdict> | undefined, now: number): string {
  const counts = { ready: 0, pending: 0, failed: 0, unavailable: 0 };
  for (const v of verdicts?.values() ?? []) counts[v.state]++;
  const of = state.batches.length;
  const done = Math.min(state.batch, of);
  const bar = "#".repeat(Math.round((done / Math.max(1, of)) * 30)).padEnd(30, ".");
  const waited = Math.round((now - (state.batchStartedAt ?? now)) / 1000);
  return [
    `Rollout ${state.namespace}/${state.name} → revision ${state.revision} (${state.phase})  started by ${state.startedBy}`,
    `[${bar}] ${done}/${of} batches`,
    state.batch < of
      ? `batch ${state.batch + 1}/${of}: ${state.batches[state.batch]!.length} nodes: ${counts.ready} ready, ${counts.pending} pending, ${counts.unavailable} unavailable, ${counts.failed} failed (${waited}s of ${state.strategy.progressDeadlineSeconds}s)`
      : "",
    "",
    ...state.results.map((r) => batchLine(state, r).trimEnd()),
    "",
  ].join("\n");
}

/** Prints a rollout's progress: batch lines once each (or the live view on a terminal) and the end line. */
function printer(io: RolloutIo, clock: Clock) {
  const tty = io.out.isTTY === true;
  let printed = 0;
  return {
    progress(state: RolloutState, verdicts?: Map<string, NodeVerdict>) {
      if (tty) {
        io.out.write(`\x1b[H\x1b[2J${liveView(state, verdicts, clock.now())}`);
        return;
      }
      if (state.results.length < printed) printed = 0;
      for (const r of state.results.slice(printed)) io.out.write(batchLine(state, r));
      printed = state.results.length;
    },
    end(state: RolloutState) {
      this.progress(state);
      io.out.write(endLine(state, clock.now()));
      return exitFor(state);
    },
  };
}

/** Reads and validates the manifest as `kubelet validate` does; the one pod in it, or the exit code. */
async function podFrom(file: string, allowPrivileged: boolean, io: RolloutIo): Promise<Pod | number> {
  if (!(await manifestValid(file, { allowPrivileged, err: io.err, command: "kubelet fleet rollout" })))
    return ROLLOUT_EXIT.failed;
  const { pods } = readManifests((await readManifestFile(file, DEFAULT_MAX_MANIFEST_BYTES))!, {
    source: "file",
    origin: file,
  });
  if (pods.length !== 1) {
    io.err.write(`kubelet fleet rollout: ${file} holds ${pods.length} pods: a rollout takes one pod\n`);
    return ROLLOUT_EXIT.failed;
  }
  return pods[0]!;
}

/** Answers a rollout request; resolves to its exit code (ROLLOUT_EXIT). */
export async function runRollout(
  request: RolloutRequest,
  deps: { client: RolloutClient; clock: Clock; signal?: AbortSignal; pollMs?: number },
  io: RolloutIo,
): Promise<number> {
  const { client, clock } = deps;
  const { namespace } = request;
  const print = printer(io, clock);
  const drive = async (name: string) =>
    print.end(await driveRollout({ ...deps, onProgress: (s, v) => print.progress(s, v) }, namespace, name));
  const start = async (pod: Pod, strategy: RolloutStrategy, changeCause?: string, supersede = false) => {
    const blocker = /^0+%?$/.test(strategy.maxSurge) ? undefined : surgeBlocker(pod);
    if (blocker) {
      io.err.write(
        `kubelet fleet rollout: --max-surge ${strategy.maxSurge} needs the pod to run twice on a node, and ${pod.metadata.namespace}/${pod.metadata.name} cannot: ${blocker}; use --max-surge 0\n`,
      );
      return ROLLOUT_EXIT.usage;
    }
    const result = await startRollout({ client, clock, who: whoAmI(), strategy, changeCause, supersede }, pod);
    if ("refused" in result) {
      io.err.write(`kubelet fleet rollout: ${result.refused}\n`);
      return ROLLOUT_EXIT.failed;
    }
    if ("unchanged" in result) {
      io.out.write(
        `pod/${namespace}/${pod.metadata.name} unchanged: every node is placed at revision ${result.unchanged.revision} (manifest ${result.unchanged.hash})\n`,
      );
      return ROLLOUT_EXIT.complete;
    }
    const s = result.started;
    io.out.write(
      `rollout of ${namespace}/${s.name} to revision ${s.revision} (manifest ${s.hash}) started: ${s.batches.flat().length} nodes in ${s.batches.length} batches\n`,
    );
    return drive(s.name);
  };
  switch (request.verb) {
    case "start": {
      const pod = await podFrom(request.file, request.allowPrivileged === true, io);
      if (typeof pod === "number") return pod;
      if (request.pod && request.pod !== pod.metadata.name) {
        io.err.write(
          `kubelet fleet rollout: ${request.file} holds pod "${pod.metadata.name}", not "${request.pod}": metadata.name must name the pod rolled out\n`,
        );
        return ROLLOUT_EXIT.failed;
      }
      return start(pod, request.strategy, request.changeCause);
    }
    case "undo": {
      const revisions = await listRevisions(client, namespace, request.pod);
      const { state } = await readRollout(client, namespace, request.pod);
      // The revision the current one replaced, as Kubernetes' undo takes; after a rollback, the latest other than
      // the two it was between.
      const previous = !state
        ? revisions.at(-2)?.revision
        : state.phase === "Complete"
          ? state.fromRevision
          : state.phase === "Paused"
            ? state.pausedPhase === "RollingBack"
              ? state.revision
              : state.fromRevision
            : [...revisions].reverse().find((r) => r.revision !== state.revision && r.revision !== state.updateRevision)
                ?.revision;
      const to = request.toRevision ?? previous;
      const revision = revisions.find((r) => r.revision === to);
      if (!revision) {
        io.err.write(
          `kubelet fleet rollout undo: ${to === undefined ? "no earlier revision" : `revision ${to} not found`} for ${namespace}/${request.pod} (kubelet fleet rollout history ${request.pod} lists them)\n`,
        );
        return ROLLOUT_EXIT.failed;
      }
      // An undo replaces a paused rollout: its nodes are taken to the revision asked for, batch by batch, as the
      // rollout it undoes took them (its --max-surge: a surge rollout's undo leaves no node without a Ready copy).
      const strategy = { ...(state?.strategy ?? request.strategy), ...request.given };
      const noBatch = noBatchTaken(strategy);
      if (noBatch) {
        io.err.write(
          `kubelet fleet rollout undo: ${noBatch} (the rollout undone has ${state?.strategy.maxUnavailable} and ${state?.strategy.maxSurge})\n`,
        );
        return ROLLOUT_EXIT.usage;
      }
      return start(revision.pod, strategy, `undo: back to revision ${revision.revision}`, true);
    }
    case "pause": {
      const state = await pauseRollout(client, namespace, request.pod);
      io.out.write(
        `rollout of ${namespace}/${request.pod} paused at batch ${state.batch + 1}/${state.batches.length}\n`,
      );
      return ROLLOUT_EXIT.complete;
    }
    case "resume": {
      const state = await unpauseRollout(client, namespace, request.pod);
      if (state.phase !== "Progressing" && state.phase !== "RollingBack") {
        io.out.write(endLine(state, clock.now()));
        return exitFor(state);
      }
      io.out.write(
        `resuming rollout of ${namespace}/${request.pod} to revision ${state.revision} at batch ${Math.min(state.batch + 1, state.batches.length)}/${state.batches.length}\n`,
      );
      return drive(request.pod);
    }
    case "history": {
      const revisions = await listRevisions(client, namespace, request.pod);
      if (revisions.length === 0) {
        io.err.write(`kubelet fleet rollout history: no revisions of ${namespace}/${request.pod} recorded\n`);
        return ROLLOUT_EXIT.failed;
      }
      const { state } = await readRollout(client, namespace, request.pod);
      io.out.write(
        table(
          ["REVISION", "MANIFEST", "CREATED", "BY", "CHANGE-CAUSE"],
          revisions.map((r) => [
            `${r.revision}${state && r.revision === state.revision ? " *" : ""}`,
            r.hash,
            r.createdAt,
            r.createdBy,
            r.changeCause ?? "<none>",
          ]),
          "",
        ),
      );
      return ROLLOUT_EXIT.complete;
    }
    case "status":
      return followRollout(request, deps, io, print);
  }
}

/** `rollout status`: the rollout followed until it ends, pauses or is left without a driver. */
async function followRollout(
  request: { pod: string; namespace: string },
  deps: { client: RolloutClient; clock: Clock; signal?: AbortSignal; pollMs?: number },
  io: RolloutIo,
  print: ReturnType<typeof printer>,
): Promise<number> {
  const { client, clock } = deps;
  for (;;) {
    const { state } = await readRollout(client, request.namespace, request.pod);
    if (!state) {
      io.err.write(`kubelet fleet rollout status: no rollout of ${request.namespace}/${request.pod} recorded\n`);
      return ROLLOUT_EXIT.failed;
    }
    const active = state.phase === "Progressing" || state.phase === "RollingBack";
    if (!active) return print.end(state);
    if (!(await driverAlive(client, state))) {
      print.progress(state);
      io.out.write(endLine(state, clock.now()));
      io.out.write(
        `no command drives it (the one that did stopped): kubelet fleet rollout resume ${request.pod} goes on from batch ${state.batch + 1}\n`,
      );
      return ROLLOUT_EXIT.undriven;
    }
    print.progress(state);
    if (deps.signal?.aborted) return ROLLOUT_EXIT.undriven;
    await clock.sleep(deps.pollMs ?? 1000, deps.signal).catch(() => {});
  }
}
