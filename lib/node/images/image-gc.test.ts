import { beforeEach, describe, expect, test } from "bun:test";
import { FakeClock } from "../../testing/fake-clock.ts";
import { FakeRuntime } from "../../testing/fake-runtime.ts";
import { silentLogger } from "../../log.ts";
import { createEventRecorder } from "../events/events.ts";
import type { FsStats } from "../stats/filesystem.ts";
import { createImageGc, fullReference } from "./image-gc.ts";
import { createImageManager } from "./images.ts";

const MB = 1_000_000;

describe("image garbage collection", () => {
  let clock: FakeClock;
  let runtime: FakeRuntime;
  let events: ReturnType<typeof createEventRecorder>;
  /** A 100 MB image filesystem whose use is 10 MB plus the images present. */
  let statted: string[];
  const statFs = async (path: string): Promise<FsStats> => {
    statted.push(path);
    const used = 10 * MB + [...runtime.images].reduce((n, ref) => n + (runtime.imageSizes.get(ref) ?? 0), 0);
    return {
      capacityBytes: 100 * MB,
      availableBytes: 100 * MB - used,
      usedBytes: used,
      inodes: 1000,
      inodesFree: 900,
      inodesUsed: 100,
    };
  };
  const gc = (minAgeMs = 60_000, maxAgeMs = 0) =>
    createImageGc(
      {
        highThresholdPercent: 85,
        lowThresholdPercent: 80,
        minAgeMs,
        maxAgeMs,
        pauseImage: "registry.k8s.io/pause:3.9",
        nodeName: "node-a",
        clock,
        log: silentLogger,
        events,
      },
      { runtime, statFs },
    );
  const image = (ref: string, mb: number) => {
    runtime.images.add(ref);
    runtime.imageSizes.set(ref, mb * MB);
  };

  beforeEach(() => {
    clock = new FakeClock();
    runtime = new FakeRuntime(clock);
    statted = [];
    events = createEventRecorder({ clock });
    runtime.images.clear();
    image("registry.k8s.io/pause:3.9", 1);
  });

  test("measures the image filesystem the runtime's ImageFsInfo names, asking the runtime once", async () => {
    runtime.imageFsMountpoint = "/srv/images";
    const manager = gc(0);
    await manager.garbageCollect();
    await manager.garbageCollect();
    expect(new Set(statted)).toEqual(new Set(["/srv/images"]));
    expect(runtime.calls.filter((c) => c.method === "imageFsInfo")).toHaveLength(1);
  });

  test("below the high threshold nothing is removed", async () => {
    image("old/a:1", 30);
    const manager = gc(0);
    await manager.garbageCollect();
    expect(runtime.images.has("old/a:1")).toBe(true);
    expect(runtime.calls.filter((c) => c.method === "removeImage")).toEqual([]);
  });

  test("above the high threshold it frees least recently used unused images down to the low threshold", async () => {
    image("first/used-long-ago:1", 20);
    image("second/used-recently:1", 20);
    image("never/used:1", 20);
    image("in-use/app:1", 20);
    const manager = gc(0);
    const create = async (name: string, ref: string) => runtime.seed({ name, image: ref, labels: {} });
    const first = await create("a", "first/used-long-ago:1");
    await manager.freeSpace(0); // a detection pass records what containers use
    await runtime.removeContainer(first);
    await clock.advance(1000);
    const second = await create("b", "second/used-recently:1");
    await create("c", "in-use/app:1");
    await manager.freeSpace(0);
    await runtime.removeContainer(second);
    await manager.garbageCollect(); // 91% used: 11 MB to free; the never-used image is the least recently used
    expect([...runtime.images].sort()).toEqual([
      "first/used-long-ago:1",
      "in-use/app:1",
      "registry.k8s.io/pause:3.9",
      "second/used-recently:1",
    ]);
    runtime.imageSizes.set("in-use/app:1", 40 * MB); // 91% again: next the image used longest ago, never the used one
    await manager.garbageCollect();
    expect([...runtime.images].sort()).toEqual(["in-use/app:1", "registry.k8s.io/pause:3.9", "second/used-recently:1"]);
  });

  test("never removes the pause image nor an image seen for less than the minimum age", async () => {
    runtime.imageSizes.set("registry.k8s.io/pause:3.9", 50 * MB);
    image("young/a:1", 40);
    const manager = gc(120_000);
    await manager.garbageCollect();
    expect(runtime.images.has("young/a:1")).toBe(true);
    expect(runtime.images.has("registry.k8s.io/pause:3.9")).toBe(true);
    expect(events.list().map((e) => [e.reason, e.involvedObject.kind])).toEqual([["FreeDiskSpaceFailed", "Node"]]);
    await clock.advance(120_000);
    await manager.garbageCollect();
    expect(runtime.images.has("young/a:1")).toBe(false);
  });

  test("never removes the runtime's own sandbox image (its Status names it) nor --network_container_image", async () => {
    runtime.podInfraImage = "docker.io/mirror/pause:3.10"; // the runtime's sandbox_image, listed by its short name
    image("mirror/pause:3.10", 45);
    image("old/a:1", 40);
    runtime.imageSizes.set("registry.k8s.io/pause:3.9", 45 * MB);
    const manager = gc(0);
    await manager.garbageCollect();
    expect([...runtime.images].sort()).toEqual(["mirror/pause:3.10", "registry.k8s.io/pause:3.9"]);
  });

  test("imageMaximumGCAge removes an image unused for longer, below the threshold, once the kubelet has run that long", async () => {
    image("stale/a:1", 5);
    image("busy/b:1", 5);
    const manager = gc(1000, 60_000);
    await runtime.seed({ name: "b", image: "busy/b:1", labels: {} });
    await manager.garbageCollect(); // first detection: the kubelet has not run for the maximum age yet
    await clock.advance(60_000);
    await manager.garbageCollect();
    expect(runtime.images.has("stale/a:1")).toBe(true); // 60 s since start is not longer than 60 s
    await clock.advance(6000); // the next listing, a tenth of the maximum age later
    await manager.garbageCollect();
    expect([...runtime.images].sort()).toEqual(["busy/b:1", "registry.k8s.io/pause:3.9"]);
  });

  test("imageMaximumGCAge counts from the image's last use", async () => {
    image("once/a:1", 5);
    const manager = gc(0, 30_000);
    await manager.garbageCollect(); // first seen now, unused
    await clock.advance(40_000);
    const id = await runtime.seed({ name: "a", image: "once/a:1", labels: {} });
    await manager.garbageCollect(); // used now
    await runtime.removeContainer(id);
    await clock.advance(30_000);
    await manager.garbageCollect();
    expect(runtime.images.has("once/a:1")).toBe(true);
    await clock.advance(3000);
    await manager.garbageCollect();
    expect(runtime.images.has("once/a:1")).toBe(false);
  });

  test("a pull that would fill the image filesystem is refused with ErrImagePull and the reason", async () => {
    image("young/a:1", 89);
    const manager = gc(120_000);
    const images = createImageManager(
      { qps: 0, burst: 10, clock, events, dockerConfigPaths: [], checkSpace: manager.checkSpaceForPull },
      runtime,
    );
    const pod = { metadata: { namespace: "default", name: "p", uid: "u" } } as never;
    await expect(images.ensureImage("new/b:1", "IfNotPresent", pod)).rejects.toMatchObject({
      code: "ErrImagePull",
      message: expect.stringMatching(
        /Failed to pull image "new\/b:1": the image filesystem .* is 100% full, above --image_gc_high_threshold 85%/,
      ),
    });
    expect(runtime.calls.filter((c) => c.method === "pullImage")).toEqual([]);
  });
});

test("image references compare in full, as Docker normalises names", () => {
  for (const [ref, full] of [
    ["busybox", "docker.io/library/busybox:latest"],
    ["local/pause:latest", "docker.io/local/pause:latest"],
    ["docker.io/local/cri-pause:latest", "docker.io/local/cri-pause:latest"],
    ["registry.k8s.io/pause:3.9", "registry.k8s.io/pause:3.9"],
    ["127.0.0.1:5000/app", "127.0.0.1:5000/app:latest"],
    ["localhost/app:1", "localhost/app:1"],
    ["app@sha256:abc", "docker.io/library/app@sha256:abc"],
  ])
    expect(fullReference(ref!)).toBe(full!);
});
