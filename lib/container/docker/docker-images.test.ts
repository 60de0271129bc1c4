import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { PullProgress, RegistryAuth } from "../runtime.ts";
import type { EngineContainerItem, EngineImageInspect, EngineStream } from "./docker-engine.ts";
import { createDockerImages, type ImageEngine } from "./docker-images.ts";

const PAUSE = "registry.example:5000/pause:3.9";
const engineError = (statusCode: number, message: string) =>
  Object.assign(new Error(`(HTTP code ${statusCode}) ${message}`), { statusCode, json: { message } });

/** Newline-delimited JSON progress, as the Engine streams a pull. */
function progressStream(messages: object[]): EngineStream {
  const lines = (async function* () {
    for (const m of messages) yield new TextEncoder().encode(`${JSON.stringify(m)}\n`);
  })();
  return Object.assign(lines, { destroy: () => {} });
}

/**
 * A fake Engine with the images and containers given; a pull adds the image. `calls` records every Engine call,
 * `pulls` the credentials each pull carried.
 */
function fakeEngine(images: Record<string, EngineImageInspect> = {}, containers: Partial<EngineContainerItem>[] = []) {
  const calls: string[] = [];
  const pulls: Array<RegistryAuth | undefined> = [];
  let pullMessages: object[] = [{ status: "Pull complete" }];
  const engine: ImageEngine = {
    async inspectImage(ref) {
      calls.push(`inspectImage ${ref}`);
      const image = images[ref];
      if (!image) throw engineError(404, `No such image: ${ref}`);
      return image;
    },
    async pull(ref, auth) {
      calls.push(`pull ${ref}`);
      pulls.push(auth);
      images[ref] = { Id: `sha256:${ref.length}`, Size: 1 };
      return progressStream(pullMessages);
    },
    listImages: async () => (calls.push("listImages"), Object.values(images).map((i) => ({ ...i, Created: 1 }))),
    listContainers: async () => (calls.push("listContainers"), containers as EngineContainerItem[]),
    async removeImage(ref) {
      calls.push(`removeImage ${ref}`);
      delete images[ref];
    },
    diskUsage: async () => (calls.push("diskUsage"), { LayersSize: 42 }),
  };
  return { engine, calls, pulls, failPullsWith: (messages: object[]) => (pullMessages = messages) };
}

const service = (engine: ImageEngine, info = async () => ({ DockerRootDir: "/var/lib/docker" })) =>
  createDockerImages({ timeoutMs: 1000, sandboxImage: PAUSE }, { engine, info });

describe("Docker image status", () => {
  test("is one image inspect: the id, tags, size and the image's user", async () => {
    const { engine, calls } = fakeEngine({
      busybox: { Id: "sha256:b", RepoTags: ["busybox:1"], Size: 9, Config: { User: "1000" } },
    });
    expect(await service(engine).imageStatus("busybox")).toEqual({
      id: "sha256:b",
      repoTags: ["busybox:1"],
      sizeBytes: 9,
      uid: 1000,
    });
    expect(calls).toEqual(["inspectImage busybox"]);
  });

  test("is undefined for an image the Engine does not have", async () => {
    expect(await service(fakeEngine().engine).imageStatus("absent")).toBeUndefined();
  });
});

describe("Docker pulls", () => {
  test("report each progress message with the bytes so far over every layer", async () => {
    const { engine, failPullsWith } = fakeEngine();
    failPullsWith([
      { id: "l1", status: "Downloading", progressDetail: { current: 10, total: 20 } },
      { id: "l2", status: "Downloading", progressDetail: { current: 5, total: 5 } },
      { id: "l1", status: "Downloading", progressDetail: { current: 20, total: 20 } },
    ]);
    const seen: PullProgress[] = [];
    await service(engine).pullImage("busybox", { onProgress: (p) => seen.push(p) });
    expect(seen.map((p) => p.bytes)).toEqual([0, 10, 15, 25]);
  });

  test("a failure the Engine reports in the stream is ImagePullFailed with its reason", async () => {
    const { engine, failPullsWith } = fakeEngine();
    failPullsWith([{ status: "Pulling" }, { errorDetail: { message: "manifest unknown" }, error: "manifest unknown" }]);
    await expect(service(engine).pullImage("nothing:1")).rejects.toMatchObject({
      code: "ImagePullFailed",
      message: "cannot pull image nothing:1: manifest unknown",
    });
  });

  test("a refused pull is ImagePullFailed with the Engine's message", async () => {
    const engine = { ...fakeEngine().engine, pull: () => Promise.reject(engineError(404, "pull access denied")) };
    await expect(service(engine).pullImage("private/x")).rejects.toMatchObject({
      code: "ImagePullFailed",
      message: "cannot pull image private/x: pull access denied",
    });
  });
});

describe("the sandbox image", () => {
  let dir: string;
  const configEnv = process.env.DOCKER_CONFIG;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "docker-images-"));
    process.env.DOCKER_CONFIG = dir;
  });
  afterEach(() => {
    if (configEnv === undefined) delete process.env.DOCKER_CONFIG;
    else process.env.DOCKER_CONFIG = configEnv;
    rmSync(dir, { recursive: true, force: true });
  });

  test("present: one image inspect, no pull", async () => {
    const { engine, calls } = fakeEngine({ [PAUSE]: { Id: "sha256:p", Size: 1 } });
    await service(engine).ensureSandboxImage();
    expect(calls).toEqual([`inspectImage ${PAUSE}`]);
  });

  test("absent: pulled with the node's credentials for its registry", async () => {
    const auth = Buffer.from("node:secret").toString("base64");
    writeFileSync(join(dir, "config.json"), JSON.stringify({ auths: { "registry.example:5000": { auth } } }));
    const { engine, calls, pulls } = fakeEngine();
    await service(engine).ensureSandboxImage();
    expect(calls).toEqual([`inspectImage ${PAUSE}`, `pull ${PAUSE}`]);
    expect(pulls).toEqual([{ username: "node", password: "secret", serveraddress: "registry.example:5000" }]);
  });

  test("a failed pull names the image, --network_container_image and, when it cannot clear by itself, the air-gapped doc", async () => {
    const { engine, failPullsWith } = fakeEngine();
    failPullsWith([{ errorDetail: { message: "manifest unknown" }, error: "manifest unknown" }]);
    const error = await service(engine)
      .ensureSandboxImage()
      .then(
        () => undefined,
        (e: Error) => e,
      );
    expect(error).toMatchObject({ code: "ImagePullFailed" });
    expect(error!.message).toStartWith(
      `cannot pull the sandbox image ${PAUSE} (--network_container_image): manifest unknown`,
    );
    expect(error!.message).toContain('"Air-gapped nodes" in docs/operations.md');
  });
});

describe("Docker image listing and removal", () => {
  test("lists every image, tags without <none>, in use when a container runs it", async () => {
    const { engine } = fakeEngine(
      {
        a: { Id: "sha256:a", RepoTags: ["a:1", "<none>:<none>"], Size: 3 },
        b: { Id: "sha256:b", RepoTags: [], Size: 4 },
      },
      [{ Id: "c1", ImageID: "sha256:b" }],
    );
    expect(await service(engine).listImages()).toEqual([
      { id: "sha256:a", tags: ["a:1"], sizeBytes: 3, createdAt: 1000, inUse: false },
      { id: "sha256:b", tags: [], sizeBytes: 4, createdAt: 1000, inUse: true },
    ]);
  });

  test("removes an image tag by tag (never forced), after checking that no container uses it", async () => {
    const { engine, calls } = fakeEngine({ "sha256:a": { Id: "sha256:a", RepoTags: ["a:1", "b:2"], Size: 1 } });
    await service(engine).removeImage("sha256:a");
    expect(calls).toEqual(["inspectImage sha256:a", "listContainers", "removeImage a:1", "removeImage b:2"]);
  });

  test("refuses an image a container uses with Conflict naming the container, before untagging anything", async () => {
    const { engine, calls } = fakeEngine({ abc: { Id: "sha256:abc", RepoTags: ["a:1", "b:2"], Size: 1 } }, [
      { Id: "0123456789abcdef", ImageID: "sha256:abc" },
    ]);
    await expect(service(engine).removeImage("abc")).rejects.toMatchObject({
      code: "Conflict",
      message: "cannot remove image abc: container 0123456789ab uses it",
    });
    expect(calls).toEqual(["inspectImage abc", "listContainers"]);
  });

  test("removing an image that is gone is done", async () => {
    const { engine, calls } = fakeEngine();
    await service(engine).removeImage("sha256:gone");
    expect(calls).toEqual(["inspectImage sha256:gone"]);
  });
});

describe("the image filesystem", () => {
  test("reads at once share one disk usage count; the next read counts again", async () => {
    let counts = 0;
    let answer!: () => void;
    const engine: ImageEngine = {
      ...fakeEngine().engine,
      diskUsage: () => (counts++, new Promise((resolve) => (answer = () => resolve({ LayersSize: 42 })))),
    };
    const images = service(engine);
    const reads = Promise.all([images.imageFsInfo(), images.imageFsInfo(), images.imageFsInfo()]);
    await Promise.resolve();
    answer();
    const answer42 = { mountpoint: "/var/lib/docker", usedBytes: 42 };
    expect(await reads).toEqual([answer42, answer42, answer42]);
    expect(counts).toBe(1);
    const next = images.imageFsInfo();
    await Promise.resolve();
    answer();
    await next;
    expect(counts).toBe(2);
  });
});
