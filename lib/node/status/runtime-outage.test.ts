// The runtime outage line: one at once and one per period, the waiting pods named, the callers' repeats dropped (fake clock).
import { expect, test } from "bun:test";
import { KubeletError } from "../../api/types.ts";
import type { Runtime } from "../../container/runtime.ts";
import type { Logger } from "../../log.ts";
import { FakeClock } from "../../testing/fake-clock.ts";
import { createRuntimeOutage } from "./runtime-outage.ts";

const CAUSE = "the Docker Engine is unreachable: connect ENOENT /var/run/docker.sock: no socket there";

/** A runtime whose calls fail as an unreachable Engine's do, until `up` is set. */
function flakyRuntime() {
  const state = { up: false };
  const call = (action: string) => async () => {
    if (!state.up) throw new KubeletError("RuntimeUnavailable", `cannot ${action}: ${CAUSE}`);
    return [];
  };
  const runtime = { listContainers: call("list containers"), version: call("read the Docker version") };
  return { state, runtime: runtime as unknown as Runtime };
}

function recordingLog() {
  const lines: string[] = [];
  const log: Logger = {
    debug() {},
    info: (m) => lines.push(`info ${m}`),
    warn: (m) => lines.push(`warn ${m}`),
    error: (m) => lines.push(`error ${m}`),
    child: () => log,
  };
  return { lines, log };
}

test("an unreachable runtime is one line at once and one per 30 s naming the waiting pods; the callers' own warnings about it are dropped", async () => {
  const clock = new FakeClock();
  const { lines, log } = recordingLog();
  const outage = createRuntimeOutage({ log, clock });
  outage.waitingPods(() => ["default/web", "kube-system/dns"]);
  const { state, runtime } = flakyRuntime();
  const watched = outage.watch(runtime);
  const sync = outage.log.child("sync");
  const attempt = async () => {
    await watched.listContainers().catch((e: Error) => sync.warn(`full sync failed: ${e.message}; retrying`));
    await watched.version().catch((e: Error) => sync.warn(`sync of pod default/web paused: ${e.message}`));
  };
  await attempt();
  await clock.advance(10_000);
  await attempt();
  await clock.advance(20_000);
  await attempt();
  sync.warn("an unrelated warning");
  state.up = true;
  await clock.advance(5_000);
  await attempt();
  expect(lines).toEqual([
    `warn container runtime unavailable: ${CAUSE}; pods waiting: default/web, kube-system/dns (said again every 30s while it lasts)`,
    `warn container runtime unavailable for 30s: ${CAUSE}; pods waiting: default/web, kube-system/dns (said again every 30s while it lasts)`,
    "warn an unrelated warning",
    "info container runtime answers again after 35s: pods sync now",
  ]);
});

test("a runtime that comes and goes is said at most once per period; a later outage is said at once; other warnings pass", async () => {
  const clock = new FakeClock();
  const { lines, log } = recordingLog();
  const outage = createRuntimeOutage({ log, clock });
  const { state, runtime } = flakyRuntime();
  const watched = outage.watch(runtime);
  const flap = async () => {
    state.up = false;
    await watched.version().catch(() => {});
    state.up = true;
    await watched.version();
  };
  await flap();
  await clock.advance(1_000);
  await flap();
  await clock.advance(30_000);
  await flap();
  outage.log.warn("cannot start container app: image not found");
  expect(lines).toEqual([
    `warn container runtime unavailable: ${CAUSE} (said again every 30s while it lasts)`,
    "info container runtime answers again after 0s: pods sync now",
    `warn container runtime unavailable: ${CAUSE} (said again every 30s while it lasts)`,
    "info container runtime answers again after 0s: pods sync now",
    "warn cannot start container app: image not found",
  ]);
});
