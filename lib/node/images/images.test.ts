// Image pulls: policies, the QPS bucket, per-image back-off and credentials.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { execFileSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createDockerRuntime } from "../../container/docker/docker.ts";
import { credentialsFor, registryOf } from "../../container/docker/docker-credentials.ts";
import { createEventRecorder } from "../events/events.ts";
import { createImageManager, TokenBucket, type ImageManagerOptions } from "./images.ts";
import { noopMetrics } from "../../metrics.ts";
import { FakeClock } from "../../testing/fake-clock.ts";
import { FakeRuntime } from "../../testing/fake-runtime.ts";
import { testConfig, testPod } from "../../testing/pods.ts";
import { describeWithServices } from "../../testing/services.ts";
import { KubeletError } from "../../api/types.ts";
import type { PullOptions } from "../../container/runtime.ts";
import type { ConfigLookup } from "../../api/config-objects.ts";

const pod = testPod("p");

/** Each pull the runtime was asked for: the image and the options it came with. */
const pulledWith = (runtime: FakeRuntime) =>
  runtime.calls
    .filter((c) => c.method === "pullImage")
    .map((c) => ({ ref: c.args[0] as string, ...(c.args[1] as PullOptions) }));

function setup(qps = 0, burst = 10, pulls: Partial<ImageManagerOptions> = {}) {
  const clock = new FakeClock();
  const runtime = new FakeRuntime(clock);
  const events = createEventRecorder({ clock });
  const pullMetrics: boolean[] = [];
  const metrics = { ...noopMetrics, imagePull: (_seconds: number, failed: boolean) => void pullMetrics.push(failed) };
  const images = createImageManager({ qps, burst, clock, events, metrics, dockerConfigPaths: [], ...pulls }, runtime);
  return {
    clock,
    runtime,
    images,
    events,
    pullMetrics,
    pulls: () => runtime.calls.filter((c) => c.method === "pullImage").length,
  };
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
    await expect(s.images.ensureImage("nope:1", "IfNotPresent", pod)).rejects.toMatchObject({
      code: "ImagePullBackOff",
    });
    expect(s.pulls()).toBe(1);
    await s.clock.advance(10_000);
    s.runtime.failNext("pullImage", new Error("manifest unknown"));
    await expect(s.images.ensureImage("nope:1", "IfNotPresent", pod)).rejects.toMatchObject({ code: "ErrImagePull" });
    await s.clock.advance(10_000);
    await expect(s.images.ensureImage("nope:1", "IfNotPresent", pod)).rejects.toMatchObject({
      code: "ImagePullBackOff",
    });
    await s.clock.advance(10_000);
    expect((await s.images.ensureImage("nope:1", "IfNotPresent", pod)).id).toBe("sha256:nope:1");
  });

  test("a pull that cannot succeed by retrying names the operator doc; one that may clear does not", async () => {
    const s = setup();
    s.runtime.failNext(
      "pullImage",
      new KubeletError(
        "ImagePullFailed",
        'cannot pull image registry.example/app:1: Get "https://registry.example/v2/": dial tcp: lookup registry.example on 10.0.0.2:53: no such host',
      ),
    );
    await expect(s.images.ensureImage("registry.example/app:1", "IfNotPresent", pod)).rejects.toMatchObject({
      code: "ErrImagePull",
      message: expect.stringMatching(/no such host; see "Air-gapped nodes" in docs\/operations.md$/),
    });
    s.runtime.failNext("pullImage", new Error("dial tcp 127.0.0.1:1: connect: connection refused"));
    await expect(s.images.ensureImage("127.0.0.1:1/app:1", "IfNotPresent", pod)).rejects.toMatchObject({
      message: 'Failed to pull image "127.0.0.1:1/app:1": dial tcp 127.0.0.1:1: connect: connection refused',
    });
    expect(
      s.events
        .list()
        .filter((e) => e.reason === "Failed")
        .map((e) => e.message.endsWith("docs/operations.md")),
    ).toEqual([true, false]);
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

  test("pulls wait for the bucket: the runtime sees them one 1/qps apart, and a waiting pull is still shared", async () => {
    const s = setup(2, 1);
    s.runtime.pullDelayMs = 100; // a registry that answers in 100 ms: spacing must still be the bucket's
    const start = s.clock.now();
    const pulls = [1, 2, 3].map((n) => s.images.ensureImage(`busybox:${n}`, "Always", pod));
    const shared = s.images.ensureImage("busybox:3", "Always", pod);
    await s.clock.advance(2000);
    await Promise.all([...pulls, shared]);
    const seen = s.runtime.calls.filter((c) => c.method === "pullImage").map((c) => [c.args[0], c.at - start]);
    expect(seen).toEqual([
      ["busybox:1", 0],
      ["busybox:2", 500],
      ["busybox:3", 1000],
    ]);
  });

  test("qps 0 means no limit", async () => {
    const s = setup(0, 0);
    await Promise.all([1, 2, 3, 4, 5].map((n) => s.images.ensureImage(`busybox:${n}`, "Always", pod)));
    expect(s.pulls()).toBe(5);
  });

  test("a success resets the back-off; events and metrics tell the story", async () => {
    const s = setup();
    s.runtime.failNext("pullImage", new KubeletError("ImagePullFailed", "cannot pull image nope:1: manifest unknown"));
    await expect(s.images.ensureImage("nope:1", "IfNotPresent", pod)).rejects.toMatchObject({
      code: "ErrImagePull",
      message: expect.stringContaining("manifest unknown"),
    });
    await expect(s.images.ensureImage("nope:1", "IfNotPresent", pod)).rejects.toMatchObject({
      code: "ImagePullBackOff",
    });
    await s.clock.advance(10_000);
    await s.images.ensureImage("nope:1", "Always", pod);
    s.runtime.failNext("pullImage", new Error("flaky"));
    await expect(s.images.ensureImage("nope:1", "Always", pod)).rejects.toMatchObject({ code: "ErrImagePull" });
    await s.clock.advance(10_000); // back to the first 10 s step, not 20 s
    await s.images.ensureImage("nope:1", "Always", pod);
    expect([...new Set(s.events.list().map((e) => e.reason))].sort()).toEqual([
      "BackOff",
      "Failed",
      "Pulled",
      "Pulling",
    ]);
    expect(s.pullMetrics).toEqual([true, false, true, false]);
  });

  test("an unreachable daemon is not the image's fault: no back-off", async () => {
    const s = setup();
    s.runtime.failNext(
      "pullImage",
      new KubeletError("RuntimeUnavailable", "cannot pull image busybox:1.35: the Docker Engine is unreachable"),
    );
    await expect(s.images.ensureImage("busybox:1.35", "IfNotPresent", pod)).rejects.toMatchObject({
      code: "RuntimeUnavailable",
    });
    expect((await s.images.ensureImage("busybox:1.35", "IfNotPresent", pod)).id).toBe("sha256:busybox:1.35");
  });

  test("pulls with the credentials of the image's registry", async () => {
    const dir = mkdtempSync(join(tmpdir(), "kubelet-docker-config-"));
    writeFileSync(
      join(dir, "config.json"),
      JSON.stringify({ auths: { "registry.example.com": { auth: Buffer.from("u:p").toString("base64") } } }),
    );
    const runtime = new FakeRuntime(new FakeClock());
    const images = createImageManager({ qps: 0, burst: 0, dockerConfigPaths: [join(dir, "config.json")] }, runtime);
    await images.ensureImage("registry.example.com/team/app:1", "IfNotPresent", pod);
    await images.ensureImage("busybox:1.35", "IfNotPresent", pod);
    expect(pulledWith(runtime).map(({ ref, auth }) => [ref, auth])).toEqual([
      ["registry.example.com/team/app:1", { username: "u", password: "p", serveraddress: "registry.example.com" }],
      ["busybox:1.35", undefined],
    ]);
  });
});

describe("pull slots and the progress deadline", () => {
  /** The images whose pull has begun, in order. */
  const begun = (s: ReturnType<typeof setup>) =>
    s.runtime.calls.filter((c) => c.method === "pullImage").map((c) => c.args[0]);

  test("pulls are serialized by default: a second image waits until the first is pulled", async () => {
    const s = setup();
    s.runtime.pullDelayMs = 5000;
    const both = [s.images.ensureImage("a:1", "Always", pod), s.images.ensureImage("b:1", "Always", pod)];
    await s.clock.advance(0);
    expect(begun(s)).toEqual(["a:1"]);
    await s.clock.advance(5000);
    expect(begun(s)).toEqual(["a:1", "b:1"]);
    await s.clock.advance(5000);
    await Promise.all(both);
  });

  test("unserialized pulls run up to maxParallel at once, then queue; 0 means no limit", async () => {
    for (const [maxParallel, atOnce] of [
      [2, 2],
      [0, 3],
    ] as const) {
      const s = setup(0, 10, { serialize: false, maxParallel });
      s.runtime.pullDelayMs = 5000;
      const all = ["a:1", "b:1", "c:1"].map((image) => s.images.ensureImage(image, "Always", pod));
      await s.clock.advance(0);
      expect(begun(s)).toHaveLength(atOnce);
      await s.clock.advance(5000);
      expect(begun(s)).toHaveLength(3);
      await s.clock.advance(5000);
      await Promise.all(all);
    }
  });

  test("a pull with no progress for the deadline is cancelled as ErrImagePull, backs off, and frees the slot", async () => {
    const s = setup(0, 10, { progressDeadlineMs: 60_000 });
    s.runtime.stalledPulls.add("stuck:1");
    const stuck = s.images.ensureImage("stuck:1", "IfNotPresent", pod);
    stuck.catch(() => {});
    const next = s.images.ensureImage("other:1", "IfNotPresent", pod);
    await s.clock.advance(59_999);
    expect(begun(s)).toEqual(["stuck:1"]);
    await s.clock.advance(1);
    await expect(stuck).rejects.toMatchObject({
      code: "ErrImagePull",
      message:
        'Failed to pull image "stuck:1": Cancel pulling image "stuck:1" because of no progress for 60s, latest progress: "" (0 bytes received)',
    });
    await next;
    expect(begun(s)).toEqual(["stuck:1", "other:1"]);
    await expect(s.images.ensureImage("stuck:1", "IfNotPresent", pod)).rejects.toMatchObject({
      code: "ImagePullBackOff",
    });
  });

  test("a pull that stalls after some progress is cancelled naming its latest progress and the bytes received", async () => {
    const s = setup(0, 10, { progressDeadlineMs: 3000 });
    s.runtime.pullDelayMs = 4000;
    s.runtime.pullProgressEveryMs = 1000;
    s.runtime.stalledPulls.add("slow:1");
    const slow = s.images.ensureImage("slow:1", "IfNotPresent", pod);
    slow.catch(() => {});
    await s.clock.advance(6999);
    expect(s.events.list().filter((e) => e.reason === "Failed")).toEqual([]);
    await s.clock.advance(1);
    const message =
      'Failed to pull image "slow:1": Cancel pulling image "slow:1" because of no progress for 3s, latest progress: "slow:1: Downloading 4000/4000" (4000 bytes received)';
    await expect(slow).rejects.toMatchObject({ code: "ErrImagePull", message });
    expect(s.events.list().find((e) => e.reason === "Failed")?.message).toBe(message);
  });

  test("on a runtime that reports no pull progress (the CRI) a pull longer than the deadline is never cancelled", async () => {
    const s = setup(0, 10, { progressDeadlineMs: 60_000 });
    s.runtime.reportsPullProgress = false;
    s.runtime.pullDelayMs = 150_000;
    s.runtime.pullProgressEveryMs = 50_000;
    const slow = s.images.ensureImage("slow:1", "IfNotPresent", pod);
    await s.clock.advance(150_000);
    expect((await slow).id).toBe("sha256:slow:1");
    expect(pulledWith(s.runtime)[0]?.signal).toBeUndefined();
  });

  test("progress messages keep a slow pull alive past the deadline", async () => {
    const s = setup(0, 10, { progressDeadlineMs: 60_000 });
    s.runtime.pullDelayMs = 150_000;
    s.runtime.pullProgressEveryMs = 50_000;
    const slow = s.images.ensureImage("slow:1", "IfNotPresent", pod);
    await s.clock.advance(150_000);
    expect((await slow).id).toBe("sha256:slow:1");
  });
});

describe("image pull secrets", () => {
  test("a pod's dockerconfigjson Secret is used before the node's config.json, for its registry only", async () => {
    const dir = mkdtempSync(join(tmpdir(), "kubelet-docker-config-"));
    writeFileSync(
      join(dir, "config.json"),
      JSON.stringify({ auths: { "registry.example.com": { auth: Buffer.from("node:n").toString("base64") } } }),
    );
    const secret = testConfig(
      "Secret",
      "regcred",
      {
        type: "kubernetes.io/dockerconfigjson",
        stringData: {
          ".dockerconfigjson": JSON.stringify({
            auths: { "https://registry.example.com": { username: "pod", password: "s" } },
          }),
        },
      },
      { namespace: "team" },
    );
    const configs: ConfigLookup = {
      get: (kind, namespace, name) =>
        kind === "Secret" && namespace === "team" && name === "regcred" ? secret : undefined,
    };
    const runtime = new FakeRuntime(new FakeClock());
    const images = createImageManager(
      { qps: 0, burst: 0, configs, dockerConfigPaths: [join(dir, "config.json")] },
      runtime,
    );
    const withSecret = testPod("p", { imagePullSecrets: [{ name: "regcred" }] }, { namespace: "team" });
    await images.ensureImage("registry.example.com/team/app:1", "Always", withSecret);
    await images.ensureImage("registry.example.com/team/app:1", "Always", pod);
    expect(pulledWith(runtime).map(({ auth }) => auth)).toEqual([
      { username: "pod", password: "s", serveraddress: "registry.example.com" },
      { username: "node", password: "n", serveraddress: "registry.example.com" },
    ]);
  });
});

describe("registry credentials", () => {
  test("match the image's registry in Docker's config.json, Docker Hub aliases included", () => {
    const dir = mkdtempSync(join(tmpdir(), "kubelet-docker-config-"));
    const config = join(dir, "config.json");
    writeFileSync(
      config,
      JSON.stringify({
        auths: {
          "https://index.docker.io/v1/": { auth: Buffer.from("hubuser:hubpass").toString("base64") },
          "registry.example.com:5000": { username: "u", password: "p:w" },
          "http://quay.io/v2/": { auth: Buffer.from("q:x").toString("base64") },
        },
      }),
    );
    expect(registryOf("busybox")).toBe("docker.io");
    expect(registryOf("library/busybox:1")).toBe("docker.io");
    expect(registryOf("registry.example.com:5000/team/app:1")).toBe("registry.example.com:5000");
    expect(credentialsFor("busybox:1.35", [config])).toMatchObject({ username: "hubuser", password: "hubpass" });
    expect(credentialsFor("registry.example.com:5000/team/app:1", [config])).toMatchObject({
      username: "u",
      password: "p:w",
    });
    expect(credentialsFor("quay.io/x/y:1", [config])).toMatchObject({ username: "q", password: "x" });
    expect(credentialsFor("ghcr.io/x/y:1", [config])).toBeUndefined();
    expect(credentialsFor("index.docker.io/library/busybox", [config])).toMatchObject({ username: "hubuser" });
    expect(credentialsFor("busybox", [join(dir, "missing.json")])).toBeUndefined();
  });
});

describeWithServices("image manager on the real registry", (services) => {
  const runtime = createDockerRuntime({ endpoint: services.dockerHost });
  const docker = (...args: string[]) =>
    execFileSync("docker", ["-H", services.dockerHost, ...args], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "pipe"],
    }).trim();
  const tag = `${Date.now()}`;
  const refs = [0, 1, 2, 3, 4, 5].map((n) => `${services.registry}/rt-img/busybox:${tag}-${n}`);
  beforeAll(() => {
    for (const ref of refs) docker("tag", services.busybox, ref);
    for (const ref of refs) docker("push", "-q", ref);
    for (const ref of refs) docker("rmi", ref);
  });
  afterAll(() => {
    for (const ref of refs) {
      try {
        docker("rmi", ref);
      } catch {
        // not pulled by the test that failed
      }
    }
  });

  test("pulls a missing image from the registry and finds it present afterwards", async () => {
    const images = createImageManager({ qps: 0, burst: 0, dockerConfigPaths: [] }, runtime);
    expect(await runtime.imageStatus(refs[5]!)).toBeUndefined();
    const { id } = await images.ensureImage(refs[5]!, "IfNotPresent", pod);
    expect(id).toStartWith("sha256:");
    expect((await runtime.imageStatus(refs[5]!))?.id).toBe(id);
  });

  test("at qps 2, burst 1 the registry sees five pulls one half second apart", async () => {
    // A recording front door to the registry: the times below are when the registry was asked, so a slow
    // registry cannot pass for throttling. 127.0.0.0/8 registries are plain HTTP to dockerd.
    const seen = new Map<string, number>();
    const front = createServer(async (req, res) => {
      const manifest = /^\/v2\/rt-img\/busybox\/manifests\/(.+)$/.exec(req.url ?? "");
      if (manifest && !seen.has(manifest[1]!)) seen.set(manifest[1]!, performance.now());
      const upstream = await fetch(`http://${services.registry}${req.url}`, {
        method: req.method,
        headers: { accept: req.headers.accept ?? "*/*" },
      });
      res.writeHead(upstream.status, Object.fromEntries(upstream.headers));
      if (upstream.body) for await (const chunk of upstream.body) res.write(chunk);
      res.end();
    });
    await new Promise<void>((resolve) => front.listen(0, "127.0.0.1", resolve));
    const host = `127.0.0.1:${(front.address() as AddressInfo).port}`;
    const viaFront = refs.slice(0, 5).map((ref) => ref.replace(services.registry, host));
    try {
      const images = createImageManager({ qps: 2, burst: 1, dockerConfigPaths: [] }, runtime);
      await Promise.all(viaFront.map((ref) => images.ensureImage(ref, "Always", pod)));
      const times = [...seen.values()].sort((a, b) => a - b);
      expect(times).toHaveLength(5);
      // Pull i leaves the bucket at 500·i ms; dockerd's own latency may shift each by a little.
      times.forEach((t, i) => expect(t - times[0]!).toBeGreaterThanOrEqual(500 * i - 150));
    } finally {
      front.close();
      for (const ref of viaFront) docker("rmi", ref);
    }
  });

  test("a registry nobody listens on is ErrImagePull, then ImagePullBackOff without a second try", async () => {
    const events = createEventRecorder();
    const pulls: string[] = [];
    const counting = { ...runtime, pullImage: (ref: string) => (pulls.push(ref), runtime.pullImage(ref)) };
    const images = createImageManager({ qps: 0, burst: 0, dockerConfigPaths: [], events }, counting);
    const ref = `127.0.0.1:1/rt-img/busybox:${tag}`;
    await expect(images.ensureImage(ref, "IfNotPresent", pod)).rejects.toMatchObject({
      code: "ErrImagePull",
      message: expect.stringMatching(/connection refused|connect/i),
    });
    await expect(images.ensureImage(ref, "IfNotPresent", pod)).rejects.toMatchObject({ code: "ImagePullBackOff" });
    expect(pulls).toEqual([ref]);
    expect(events.list().map((e) => e.reason)).toEqual(["Pulling", "Failed", "BackOff"]);
  });
});
