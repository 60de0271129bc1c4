// The fleet reporter on an in-memory etcd and a fake clock: what it writes, when, and what it
// does when etcd goes away.
import { expect, test } from "bun:test";
import { ANNOTATION, type Pod, type V1Node } from "../../api/types.ts";
import { silentLogger } from "../../log.ts";
import { FakeClock } from "../../testing/fake-clock.ts";
import { FakeEtcd } from "../../testing/fake-etcd.ts";
import { testPod } from "../../testing/pods.ts";
import { createEventRecorder } from "../events/events.ts";
import { createFleetReporter, fleetKeys } from "./fleet-reporter.ts";

function harness(options: { eventLimit?: number } = {}) {
  const clock = new FakeClock();
  const etcd = new FakeEtcd();
  const events = createEventRecorder({ clock });
  const state = { pods: [] as Pod[], version: 0, ready: true, nodeBuilds: 0 };
  const listeners = new Set<() => void>();
  const podsChanged = () => {
    state.version++;
    for (const listener of listeners) listener();
  };
  const setPods = (pods: Array<[string, string]>) => {
    state.pods = pods.map(([name, phase]) => ({ ...testPod(name), status: { phase } }));
    podsChanged();
  };
  const reporter = createFleetReporter(
    {
      hostname: "n1",
      leaseDurationMs: 40_000,
      updateFrequencyMs: 10_000,
      reportFrequencyMs: 300_000,
      eventLimit: options.eventLimit,
      clock,
      log: silentLogger,
    },
    {
      store: etcd,
      node: async (previous?: V1Node) => {
        state.nodeBuilds++;
        const status = state.ready ? "True" : "False";
        const before = previous?.status?.conditions?.[0];
        const now = new Date(clock.now()).toISOString();
        return {
          metadata: { name: "n1" },
          status: {
            conditions: [
              {
                type: "Ready",
                status,
                lastHeartbeatTime: now,
                lastTransitionTime: before?.status === status ? before.lastTransitionTime : now,
              },
            ],
          },
        };
      },
      pods: () => state.pods,
      podsVersion: () => state.version,
      onPodsChange(listener) {
        listeners.add(listener);
        return () => listeners.delete(listener);
      },
      events: () => events.list(),
    },
  );
  const stop = new AbortController();
  const running = reporter.run(stop.signal);
  const statuses = () =>
    Object.fromEntries([...etcd.values(fleetKeys.statuses("n1"))].map(([k, v]) => [k.split("/").pop(), v.phase]));
  return {
    clock,
    etcd,
    events,
    state,
    setPods,
    podsChanged,
    statuses,
    stop: async () => {
      stop.abort();
      await running;
    },
  };
}

test("registers the node and its pods on one lease, then writes nothing while nothing changes", async () => {
  const h = harness();
  h.setPods([
    ["a", "Running"],
    ["b", "Pending"],
  ]);
  await h.clock.advance(1000);
  const node = h.etcd.data.get(fleetKeys.node("n1"))!;
  expect(h.statuses()).toEqual({ a: "Running", b: "Pending" });
  expect(h.etcd.data.get(fleetKeys.status("n1", "default", "a"))!.lease).toBe(node.lease);
  const revision = h.etcd.revision;
  await h.clock.advance(60_000);
  expect(h.etcd.revision).toBe(revision);
  expect(h.etcd.keepAlives).toBe(6);
  await h.stop();
});

test("a burst of status changes within one window is one write, and a removed pod's status is deleted", async () => {
  const h = harness();
  h.setPods([
    ["a", "Pending"],
    ["b", "Pending"],
  ]);
  await h.clock.advance(1000);
  const revision = h.etcd.revision;
  h.setPods([
    ["a", "Running"],
    ["b", "Running"],
  ]);
  h.setPods([["a", "Failed"]]);
  await h.clock.advance(1000);
  expect(h.etcd.revision).toBe(revision + 1);
  expect(h.statuses()).toEqual({ a: "Failed" });
  await h.stop();
});

test("while etcd is away the latest state is kept and written when it answers, under a new lease if the old one expired", async () => {
  const h = harness();
  h.setPods([["a", "Pending"]]);
  await h.clock.advance(1000);
  const first = h.etcd.data.get(fleetKeys.node("n1"))!.lease;
  h.etcd.down = true;
  for (const phase of ["Running", "Failed", "Running"]) {
    h.setPods([["a", phase]]);
    await h.clock.advance(10_000);
  }
  h.etcd.expire(first);
  expect(h.etcd.data.size).toBe(0);
  h.etcd.down = false;
  await h.clock.advance(10_000);
  expect(h.statuses()).toEqual({ a: "Running" });
  expect(h.etcd.data.get(fleetKeys.node("n1"))!.lease).not.toBe(first);
  await h.stop();
});

test("a change made while etcd briefly does not answer is written when it does, on the same lease", async () => {
  const h = harness();
  h.setPods([["a", "Pending"]]);
  await h.clock.advance(1000);
  const lease = h.etcd.data.get(fleetKeys.node("n1"))!.lease;
  h.etcd.down = true;
  h.setPods([["a", "Running"]]);
  await h.clock.advance(5000);
  expect(h.statuses()).toEqual({ a: "Pending" });
  h.etcd.down = false;
  await h.clock.advance(1000);
  expect(h.statuses()).toEqual({ a: "Running" });
  expect(h.etcd.data.get(fleetKeys.status("n1", "default", "a"))!.lease).toBe(lease);
  await h.stop();
});

test("the node record is rewritten when a condition changes, not for its heartbeat alone until the report frequency", async () => {
  const h = harness();
  await h.clock.advance(1000);
  const written = () => h.etcd.values(fleetKeys.node("n1")).get(fleetKeys.node("n1"))!.status.conditions[0];
  const first = written();
  await h.clock.advance(60_000);
  expect(h.state.nodeBuilds).toBeGreaterThan(5);
  expect(written()).toEqual(first);
  h.state.ready = false;
  await h.clock.advance(10_000);
  expect(written()).toMatchObject({ status: "False" });
  expect(written().lastTransitionTime).not.toBe(first.lastTransitionTime);
  const notReady = written();
  await h.clock.advance(300_000);
  expect(written().lastHeartbeatTime).not.toBe(notReady.lastHeartbeatTime);
  expect(written().lastTransitionTime).toBe(notReady.lastTransitionTime);
  await h.stop();
});

test("keeps the most recent events, a repeat updating its own key with the count", async () => {
  const h = harness({ eventLimit: 2 });
  const pod = testPod("a");
  h.events.record(pod, "Normal", "Pulled", "one");
  h.events.record(pod, "Warning", "BackOff", "Back-off restarting failed container");
  h.events.record(pod, "Normal", "Started", "three");
  await h.clock.advance(1000);
  const reasons = () => [...h.etcd.values(fleetKeys.events("n1")).values()].map((e) => `${e.reason}:${e.count}`).sort();
  expect(reasons()).toEqual(["BackOff:1", "Started:1"]);
  h.events.record(pod, "Warning", "BackOff", "Back-off restarting failed container");
  await h.clock.advance(1000);
  expect(reasons()).toEqual(["BackOff:2", "Started:1"]);
  const [key, event] = [...h.etcd.values(fleetKeys.events("n1"))].find(([, e]) => e.reason === "BackOff")!;
  expect(key).toBe(fleetKeys.event("n1", "default", event.metadata.name));
  expect(event).toMatchObject({ kind: "Event", type: "Warning", source: { component: "kubelet", host: "n1" } });
  await h.stop();
});

test("statuses left by an earlier run are deleted when the node registers", async () => {
  const clock = new FakeClock();
  const h = harness();
  await h.stop();
  h.etcd.data.set(fleetKeys.status("n1", "default", "gone"), { value: "{}", lease: "1", modRevision: 1 });
  const again = createFleetReporter(
    {
      hostname: "n1",
      leaseDurationMs: 40_000,
      updateFrequencyMs: 10_000,
      reportFrequencyMs: 300_000,
      clock,
      log: silentLogger,
    },
    {
      store: h.etcd,
      node: async () => ({}),
      pods: () => [],
      podsVersion: () => 0,
      onPodsChange: () => () => {},
      events: () => [],
    },
  );
  const stop = new AbortController();
  const running = again.run(stop.signal);
  await clock.advance(1000);
  expect(h.etcd.values(fleetKeys.statuses("n1")).size).toBe(0);
  stop.abort();
  await running;
});

test("the manifest hash of each pod that carries one is written in the node's revisions record, and follows a rollout", async () => {
  const h = harness();
  const placed = (name: string, hash: string): Pod => {
    const pod = testPod(name);
    return {
      ...pod,
      metadata: { ...pod.metadata, annotations: { ...pod.metadata.annotations, [ANNOTATION.manifestHash]: hash } },
    };
  };
  h.state.pods = [placed("web", "aaa"), testPod("plain")];
  h.podsChanged();
  await h.clock.advance(1000);
  expect(h.etcd.values(fleetKeys.revisions("n1")).get(fleetKeys.revisions("n1"))).toEqual({ "default/web": "aaa" });
  h.state.pods = [placed("web", "bbb")];
  h.podsChanged();
  await h.clock.advance(1000);
  expect(h.etcd.values(fleetKeys.revisions("n1")).get(fleetKeys.revisions("n1"))).toEqual({ "default/web": "bbb" });
  h.state.pods = [];
  h.podsChanged();
  await h.clock.advance(1000);
  expect(h.etcd.data.has(fleetKeys.revisions("n1"))).toBe(false);
  await h.stop();
});

test("a pod status change is written 100 ms after it is seen, not at the end of the 1 s window", async () => {
  const h = harness();
  h.setPods([["a", "Pending"]]);
  await h.clock.advance(1000);
  expect(h.statuses()).toEqual({ a: "Pending" });
  h.setPods([["a", "Running"]]);
  await h.clock.advance(250);
  expect(h.statuses()).toEqual({ a: "Running" });
  await h.stop();
});
