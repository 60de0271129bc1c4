// Image pulls: policies, the QPS bucket, per-image back-off and credentials.
import { describe, expect, test } from "bun:test";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { credentialsFor, registryOf } from "./docker-config.ts";
import { createImageManager, TokenBucket } from "./images.ts";
import { FakeClock } from "./testing/fake-clock.ts";
import { FakeRuntime } from "./testing/fake-runtime.ts";
import { testPod } from "./testing/pods.ts";

const pod = testPod("p");

function setup(qps = 0, burst = 10) {
  const clock = new FakeClock();
  const runtime = new FakeRuntime(clock);
  return { clock, runtime, images: createImageManager({ qps, burst, clock, dockerConfigPaths: [] }, runtime), pulls: () => runtime.calls.filter((c) => c.method === "pullImage").length };
}

describe("image manager", () => {
  test("IfNotPresent pulls only a missing image; Always pulls every time; Never never pulls", async () => {
    const s = setup();
    await s.images.ensureImage("local/busybox:stable", "IfNotPresent", pod);
    expect(s.pulls()).toBe(0);
    await s.images.ensureImage("busybox:1.35", "IfNotPresent", pod);
    await s.images.ensureImage("busybox:1.35", "IfNotPresent", pod);
    expect(s.pulls()).toBe(1);
    await s.images.ensureImage("busybox:1.35", "Always", pod);
    expect(s.pulls()).toBe(2);
    await expect(s.images.ensureImage("nginx:1", "Never", pod)).rejects.toMatchObject({ code: "ErrImageNeverPull" });
  });

  test("concurrent requests for one image share one pull", async () => {
    const s = setup();
    await Promise.all([1, 2, 3].map(() => s.images.ensureImage("busybox:1.35", "Always", pod)));
    expect(s.pulls()).toBe(1);
  });

  test("a failed pull is ErrImagePull, then ImagePullBackOff without asking the registry, 10 s doubling", async () => {
    const s = setup();
    s.runtime.failNext("pullImage", new Error("manifest unknown"));
    await expect(s.images.ensureImage("nope:1", "IfNotPresent", pod)).rejects.toMatchObject({ code: "ErrImagePull" });
    await expect(s.images.ensureImage("nope:1", "IfNotPresent", pod)).rejects.toMatchObject({ code: "ImagePullBackOff" });
    expect(s.pulls()).toBe(1);
    await s.clock.advance(10_000);
    s.runtime.failNext("pullImage", new Error("manifest unknown"));
    await expect(s.images.ensureImage("nope:1", "IfNotPresent", pod)).rejects.toMatchObject({ code: "ErrImagePull" });
    await s.clock.advance(10_000);
    await expect(s.images.ensureImage("nope:1", "IfNotPresent", pod)).rejects.toMatchObject({ code: "ImagePullBackOff" });
    await s.clock.advance(10_000);
    expect(await s.images.ensureImage("nope:1", "IfNotPresent", pod)).toBe("sha256:nope:1");
  });

  test("the token bucket lets a burst through, then one pull per 1/qps seconds", async () => {
    const clock = new FakeClock();
    const bucket = new TokenBucket(2, 2, clock);
    const done: number[] = [];
    const start = clock.now();
    for (let i = 0; i < 5; i++) void bucket.take().then(() => done.push(clock.now() - start));
    await clock.advance(0);
    expect(done).toEqual([0, 0]);
    await clock.advance(1500);
    expect(done).toEqual([0, 0, 500, 1000, 1500]);
  });
});

describe("registry credentials", () => {
  test("match the image's registry in Docker's config.json, Docker Hub aliases included", () => {
    const dir = mkdtempSync(join(tmpdir(), "kubelet-docker-config-"));
    const config = join(dir, "config.json");
    writeFileSync(config, JSON.stringify({ auths: {
      "https://index.docker.io/v1/": { auth: Buffer.from("hubuser:hubpass").toString("base64") },
      "registry.example.com:5000": { username: "u", password: "p:w" },
    } }));
    expect(registryOf("busybox")).toBe("docker.io");
    expect(registryOf("library/busybox:1")).toBe("docker.io");
    expect(registryOf("registry.example.com:5000/team/app:1")).toBe("registry.example.com:5000");
    expect(credentialsFor("busybox:1.35", [config])).toMatchObject({ username: "hubuser", password: "hubpass" });
    expect(credentialsFor("registry.example.com:5000/team/app:1", [config])).toMatchObject({ username: "u", password: "p:w" });
    expect(credentialsFor("quay.io/x/y:1", [config])).toBeUndefined();
    expect(credentialsFor("busybox", [join(dir, "missing.json")])).toBeUndefined();
  });
});
