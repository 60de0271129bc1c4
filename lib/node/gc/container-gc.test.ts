import { beforeEach, describe, expect, test } from "bun:test";
import { LABEL } from "../../container/runtime.ts";
import { silentLogger } from "../../log.ts";
import { FakeClock } from "../../testing/fake-clock.ts";
import { FakeRuntime } from "../../testing/fake-runtime.ts";
import { testContainerConfig, testSandboxConfig } from "../../testing/cri-configs.ts";
import { createContainerGc, type ContainerGcPolicy } from "./container-gc.ts";
import { GC_LISTING_MAX_AGE_MS } from "../../container/shared-listing.ts";

describe("container garbage collection", () => {
  let clock: FakeClock;
  let runtime: FakeRuntime;
  let desired: Set<string>;
  let ready: boolean;
  const gc = (policy: Partial<ContainerGcPolicy> = {}) =>
    createContainerGc(
      { minAgeMs: 0, maxPerPodContainer: 1, maxContainers: -1, ...policy },
      { runtime, desiredPods: () => desired, allSourcesReady: () => ready, clock, log: silentLogger },
    );
  /** A container of pod `uid`, attempt `attempt`, created now; exited unless `running`. */
  const container = async (uid: string, name: string, attempt: number, running = false) => {
    const id = runtime.seed({
      name: `k8s_${name}_p_default_${uid}_${attempt}`,
      image: "local/busybox:stable",
      labels: { [LABEL.podUid]: uid, [LABEL.containerName]: name, [LABEL.restartCount]: String(attempt) },
    });
    await runtime.startContainer(id);
    if (!running) runtime.exit(id, 1);
    await clock.advance(1000);
    return id;
  };
  const left = () => [...runtime.containers.keys()];
  /** A sandbox of pod `uid`, attempt `attempt`; stopped (not ready) unless `ready`. */
  const sandbox = async (uid: string, attempt: number, ready = false) => {
    const config = testSandboxConfig(uid, "p");
    const id = await runtime.runPodSandbox({ ...config, metadata: { ...config.metadata, attempt } });
    if (!ready) await runtime.stopPodSandbox(id);
    await clock.advance(1000);
    return id;
  };

  beforeEach(() => {
    clock = new FakeClock();
    runtime = new FakeRuntime(clock);
    desired = new Set(["a", "b"]);
    ready = true;
  });

  test("keeps the newest maximum_dead_containers_per_container dead instances of each container", async () => {
    const old = [await container("a", "app", 0), await container("a", "app", 1)];
    const kept = await container("a", "app", 2);
    const running = await container("a", "app", 3, true);
    const other = await container("a", "sidecar", 0);
    expect((await gc()()).sort()).toEqual(old.sort());
    expect(left()).toEqual([kept, running, other]);
  });

  test("removes every dead container of a pod no source wants, once all sources have reported", async () => {
    const orphan = await container("gone", "app", 0);
    ready = false;
    expect(await gc()()).toEqual([]);
    ready = true;
    expect(await gc()()).toEqual([orphan]);
  });

  test("keeps dead containers younger than minimum_container_ttl_duration", async () => {
    await container("a", "app", 0);
    const young = await container("a", "app", 1);
    await container("a", "app", 2);
    await gc({ minAgeMs: 1500 })();
    expect(left()).toContain(young);
  });

  test("beyond maximum_dead_containers the oldest dead containers of the node go first", async () => {
    const oldest = await container("a", "app", 0);
    const older = await container("b", "app", 0);
    const newer = await container("a", "sidecar", 0);
    const newest = await container("b", "sidecar", 0);
    const running = await container("b", "web", 0, true);
    expect((await gc({ maxContainers: 2 })()).sort()).toEqual([oldest, older].sort());
    expect(left()).toEqual([newer, newest, running]);
    expect(await gc({ maxContainers: -1 })()).toEqual([]);
  });

  test("leaves a container that is still being created alone", async () => {
    const id = runtime.seed({
      name: "k8s_app_p_default_a_0",
      image: "local/busybox:stable",
      labels: { [LABEL.podUid]: "gone", [LABEL.containerName]: "app" },
    });
    expect(await gc()()).toEqual([]);
    await clock.advance(60_000);
    expect(await gc()()).toEqual([id]);
  });

  test("removes the dead sandboxes of a pod no source wants, once all sources have reported, after its containers", async () => {
    const dead = await sandbox("gone", 0);
    const orphan = await container("gone", "app", 0);
    ready = false;
    expect(await gc()()).toEqual([]);
    ready = true;
    expect(await gc()()).toEqual([orphan, dead]);
    expect(runtime.calls.filter((c) => c.method === "removePodSandbox").map((c) => c.args)).toEqual([[dead]]);
  });

  test("keeps the newest sandbox of a wanted pod, dead or not, and removes its older dead ones", async () => {
    const older = await sandbox("a", 0);
    const old = await sandbox("a", 1);
    const newest = await sandbox("a", 2);
    expect((await gc()()).sort()).toEqual([older, old].sort());
    expect(left()).toEqual([newest]);
  });

  test("never removes a ready sandbox, nor a dead one that still holds a container", async () => {
    const ready = await sandbox("gone", 0, true);
    const holding = await sandbox("gone", 1);
    const config = testSandboxConfig("gone", "p");
    const kept = await runtime.createContainer(
      holding,
      testContainerConfig(config, "app", 0, "local/busybox:stable", ["sleep", "60"]),
      config,
    );
    await runtime.startContainer(kept);
    expect(await gc()()).toEqual([]);
    expect(left().sort()).toEqual([ready, holding, kept].sort());
  });

  test("reads the runtime's last listing while it is current for GC, and lists when it is older", async () => {
    const old = await container("a", "app", 0);
    const kept = await container("a", "app", 1);
    const dead = await sandbox("a", 0);
    const newest = await sandbox("a", 1, true);
    // The PLEG's listing, taken now; the runtime's own lists answer only when it is not current.
    await runtime.keepListing();
    const lists = () => runtime.calls.filter((c) => c.method.startsWith("list")).length;
    const before = lists();
    await clock.advance(GC_LISTING_MAX_AGE_MS);
    expect((await gc()()).sort()).toEqual([old, dead].sort());
    expect(lists()).toBe(before);
    // Older than GC takes: listed, and what the listing still held (removed since) is not asked to go again.
    await clock.advance(1);
    expect(await gc()()).toEqual([]);
    expect(lists()).toBe(before + 2);
    expect(left().sort()).toEqual([kept, newest].sort());
  });
});
