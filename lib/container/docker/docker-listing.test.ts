// The Docker runtime's last listing (shared-listing.ts) as its own lists fill it and the kubelet's changes, the
// Engine's events and the events stream's end make it stale, on a fake Engine the test drives: which reads are
// answered without a list. (That the real Engine's stream tells of every lifecycle change is the runtime contract's.)
import { expect, test } from "bun:test";
import { FakeClock } from "../../testing/fake-clock.ts";
import { testContainerConfig, testSandboxConfig } from "../../testing/cri-configs.ts";
import { EVENTED_RELIST_PERIOD_MS } from "../pleg/evented.ts";
import type { ContainerCreateBody } from "./docker-shim.ts";
import type { DockerEngine, EngineContainerItem, EngineStream } from "./docker-engine.ts";
import { createDockerRuntime } from "./docker.ts";

const settle = () => new Promise((resolve) => setTimeout(resolve, 5));

/** An Engine holding containers in memory, with an events stream the test writes lines to and can close. */
function fakeEngine() {
  const containers = new Map<string, EngineContainerItem>();
  let lists = 0;
  let seq = 0;
  let push: (line: string) => void = () => {};
  let close: () => void = () => {};
  const events = async (_filters: unknown, signal: AbortSignal): Promise<EngineStream> => {
    const queued: Uint8Array[] = [];
    let wake = () => {};
    let closed = false;
    push = (line) => {
      queued.push(new TextEncoder().encode(`${line}\n`));
      wake();
    };
    close = () => {
      closed = true;
      wake();
    };
    signal.addEventListener("abort", close, { once: true });
    return {
      async *[Symbol.asyncIterator]() {
        while (true) {
          const next = queued.shift();
          if (next) yield next;
          else if (closed) return;
          else await new Promise<void>((resolve) => (wake = resolve));
        }
      },
      destroy: close,
    };
  };
  const state = (id: string, to: string) => {
    const c = containers.get(id);
    if (c) c.State = to;
  };
  const engine = {
    async createContainer(body: ContainerCreateBody) {
      const id = `c${++seq}`.padEnd(64, "0");
      containers.set(id, {
        Id: id,
        Names: [`/${body.name}`],
        Image: body.Image,
        ImageID: "sha256:1",
        Labels: body.Labels,
        State: "created",
        Created: 1,
        HostConfig: { NetworkMode: body.HostConfig.NetworkMode ?? "" },
      });
      return { id };
    },
    startContainer: async (id: string) => state(id, "running"),
    stopContainer: async (id: string) => state(id, "exited"),
    removeContainer: async (id: string) => containers.delete(id),
    async listContainers(options: { filters: { label: string[] } }) {
      lists++;
      const match = (c: EngineContainerItem, label: string) => {
        const [key, value] = label.split("=");
        return value === undefined ? key! in (c.Labels ?? {}) : c.Labels?.[key!] === value;
      };
      return [...containers.values()].filter((c) => options.filters.label.every((l) => match(c, l)));
    },
    events,
  };
  return {
    engine: engine as unknown as DockerEngine,
    lists: () => lists,
    emit: (action: string, id = "elsewhere") =>
      push(JSON.stringify({ Type: "container", Action: action, Actor: { ID: id, Attributes: {} }, time: 1 })),
    close: () => close(),
  };
}

/** A runtime with one pod running, its events stream open (as the sync loop keeps it) and a listing kept. */
async function started() {
  const clock = new FakeClock();
  const fake = fakeEngine();
  const runtime = createDockerRuntime({ endpoint: "unix:///nowhere", clock }, { engine: fake.engine });
  const sandbox = testSandboxConfig("uid-1", "web");
  const sandboxId = await runtime.runPodSandbox(sandbox);
  const id = await runtime.createContainer(sandboxId, testContainerConfig(sandbox, "app", 0, "busybox", []), sandbox);
  await runtime.startContainer(id);
  const abort = new AbortController();
  const heard: string[] = [];
  const watching = (async () => {
    for await (const event of runtime.events(abort.signal)) heard.push(event.type);
  })().catch(() => {});
  await settle(); // the stream is open
  await runtime.listContainers();
  await runtime.listPodSandboxes();
  return { clock, runtime, id, sandboxId, sandbox, abort, heard, watching, ...fake };
}

test("with the Engine's events stream open a full listing answers readers at any age up to the Evented PLEG's relist period", async () => {
  const { clock, runtime, id, sandboxId, lists, abort } = await started();
  const listed = lists();
  await clock.advance(EVENTED_RELIST_PERIOD_MS);
  const kept = runtime.lastListing!(3000);
  expect(kept.containers!.map((c) => [c.id, c.state, c.name])).toEqual([
    [id, "CONTAINER_RUNNING", "k8s_app_web_default_uid-1_0"],
  ]);
  expect(kept.sandboxes!.map((s) => [s.id, s.state])).toEqual([[sandboxId, "ready"]]);
  expect(lists()).toBe(listed);
  // Past that period the stream's word is not taken (a rename, a retagged image tell nothing): a reader lists.
  await clock.advance(1);
  expect(runtime.lastListing!(Number.POSITIVE_INFINITY)).toEqual({});
  abort.abort();
});

test("without the events stream a listing answers a reader only until it is older than the reader takes", async () => {
  const clock = new FakeClock();
  const fake = fakeEngine();
  const runtime = createDockerRuntime({ endpoint: "unix:///nowhere", clock }, { engine: fake.engine });
  const sandbox = testSandboxConfig("uid-1", "web");
  await runtime.runPodSandbox(sandbox);
  await runtime.listContainers();
  await runtime.listPodSandboxes();
  await clock.advance(3000);
  expect(runtime.lastListing!(3000).sandboxes).toHaveLength(1);
  expect(runtime.lastListing!(3000).containers).toEqual([]);
  await clock.advance(1);
  expect(runtime.lastListing!(3000)).toEqual({});
});

test("a pod's or a state's listing is not kept for the node's readers", async () => {
  const { runtime, abort } = await started();
  await runtime.stopContainer((await runtime.listContainers({ podUid: "uid-1" }))[0]!.id, 0);
  await runtime.listContainers({ podUid: "uid-1" });
  await runtime.listPodSandboxes({ state: "ready" });
  expect(runtime.lastListing!(3000)).toEqual({});
  abort.abort();
});

test("a sandbox or container the kubelet creates, starts, stops or removes makes the last listing stale, while under way too", async () => {
  for (const change of ["sandbox", "create", "start", "stop", "stop sandbox", "remove", "remove sandbox"] as const) {
    const { runtime, id, sandboxId, sandbox, abort } = await started();
    expect(runtime.lastListing!(3000).containers).toHaveLength(1);
    const config = testContainerConfig(sandbox, "new", 0, "busybox", []);
    const call = {
      sandbox: () => runtime.runPodSandbox(testSandboxConfig("uid-2", "other")),
      create: () => runtime.createContainer(sandboxId, config, sandbox),
      start: () => runtime.startContainer(id),
      stop: () => runtime.stopContainer(id, 0),
      "stop sandbox": () => runtime.stopPodSandbox(sandboxId),
      remove: () => runtime.removeContainer(id),
      "remove sandbox": () => runtime.removePodSandbox(sandboxId),
    }[change]();
    expect(runtime.lastListing!(3000), `${change}, under way`).toEqual({});
    await call;
    expect(runtime.lastListing!(3000), change).toEqual({});
    abort.abort();
  }
});

test("any event on the Engine's stream makes the last listing stale, another's container's too", async () => {
  for (const action of ["create", "start", "die", "oom", "stop", "kill", "destroy", "pause"]) {
    const { runtime, emit, heard, abort } = await started();
    expect(runtime.lastListing!(3000).containers).toHaveLength(1);
    emit(action);
    await settle();
    expect(heard).toHaveLength(1);
    expect(runtime.lastListing!(3000), action).toEqual({});
    // The next full listing is kept again.
    await runtime.listContainers();
    expect(runtime.lastListing!(3000).containers, action).toHaveLength(1);
    abort.abort();
  }
});

test("the events stream's end makes the last listing stale, and a listing begun while it is down is kept only as long as a reader takes", async () => {
  const { clock, runtime, close, abort, watching } = await started();
  expect(runtime.lastListing!(3000).containers).toHaveLength(1);
  close(); // the Engine ended the stream (it restarted, the connection broke)
  await watching;
  expect(runtime.lastListing!(Number.POSITIVE_INFINITY)).toEqual({});
  await runtime.listContainers();
  await clock.advance(3001);
  expect(runtime.lastListing!(3000)).toEqual({});
  abort.abort();
});
