// One contract for every Runtime, in the CRI's terms: the fake used by unit tests must behave like
// the Docker shim and a CRI runtime where the sync loop depends on it. Run by docker.test.ts,
// cri.test.ts and fake-runtime.test.ts. Containers live in a pod sandbox, as the sync runs them.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { setTimeout as sleep } from "node:timers/promises";
import { join } from "node:path";
import { testContainerConfig, testSandboxConfig } from "./cri-configs.ts";
import type { FakeProgram } from "./fake-runtime.ts";
import type { ContainerConfig, PodSandboxConfig } from "../container/cri-types.ts";
import { LABEL, type ExecResult, type LifecycleEventType, type Runtime } from "../container/runtime.ts";

/** A command the contract runs, with what it does: Docker runs it, a fake is programmed from it. */
export interface ContractScript {
  cmd: string[];
  /** As a container's command. */
  program: FakeProgram;
  /** As an exec: its result, and how long it takes when it must outlast a timeout. */
  exec?: { result: ExecResult; takesMs?: number };
}

/** The commands the contract uses (busybox sh, echo, sleep). */
export const CONTRACT_SCRIPTS = {
  idle: { cmd: ["sleep", "60"], program: {} },
  finite: {
    cmd: ["sh", "-c", "echo out; echo err >&2; exit 3"],
    program: {
      output: [
        { atMs: 0, text: "out\n" },
        { atMs: 0, text: "err\n" },
      ],
      exitCode: 3,
    },
    exec: { result: { exitCode: 3, stdout: "out\n", stderr: "err\n" } },
  },
  ticking: {
    cmd: ["sh", "-c", "echo one; sleep 0.3; echo two; exec sleep 60"],
    program: {
      output: [
        { atMs: 0, text: "one\n" },
        { atMs: 300, text: "two\n" },
      ],
    },
  },
  slow: { cmd: ["sleep", "5"], program: {}, exec: { result: { exitCode: 0, stdout: "", stderr: "" }, takesMs: 5000 } },
} satisfies Record<string, ContractScript>;

/** Polls until `check` holds (real time; a Docker container needs a moment to exit). */
async function until(check: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await sleep(20);
  }
}

/**
 * The error a call fails with. Not `expect(p).rejects`: Bun's waits for the promise without polling
 * unreferenced sockets, and gRPC's is one, so a CRI reply would arrive only after the deadline.
 */
async function rejection(call: Promise<unknown>): Promise<unknown> {
  return call.then(
    () => new Error("expected the call to fail, and it succeeded"),
    (error: unknown) => error,
  );
}

async function collect(chunks: AsyncIterable<Uint8Array>): Promise<string> {
  let text = "";
  for await (const chunk of chunks) text += new TextDecoder().decode(chunk);
  return text;
}

/**
 * The shared suite: `image` must hold busybox; `prefix` marks the sandboxes and containers it creates (and removes);
 * a CRI runtime writes container logs under `logDirectory`.
 */
export function runtimeContract(
  name: string,
  makeRuntime: () => Runtime,
  options: { image: string; prefix: string; logDirectory?: string },
): void {
  describe(name, () => {
    const runtime = makeRuntime();
    const created: string[] = [];
    const sandboxes: string[] = [];
    let sandboxId = "";
    afterAll(async () => {
      for (const id of created) await runtime.removeContainer(id);
      for (const id of sandboxes) await runtime.removePodSandbox(id);
    });
    let seq = 0;
    const uid = `uid-${options.prefix}${Date.now()}`;
    const sandboxOf = (podUid: string, pod = `${options.prefix}pod`) =>
      testSandboxConfig(podUid, pod, {
        ...(options.logDirectory ? { logDirectory: join(options.logDirectory, `default_${pod}_${podUid}`) } : {}),
      });
    const sandbox = sandboxOf(uid);
    const run = async (config: PodSandboxConfig) => {
      const id = await runtime.runPodSandbox(config);
      sandboxes.push(id);
      return id;
    };
    // Each instance is a new attempt of container "app": names stay unique within the sandbox.
    const config = (over: Partial<ContainerConfig> = {}): ContainerConfig =>
      testContainerConfig(sandbox, "app", seq++, options.image, CONTRACT_SCRIPTS.idle.cmd, over);
    beforeAll(async () => {
      sandboxId = await run(sandbox);
    });
    const create = async (over: Partial<ContainerConfig> = {}) => {
      const id = await runtime.createContainer(sandboxId, config(over), sandbox);
      created.push(id);
      return id;
    };
    const started = async (over: Partial<ContainerConfig> = {}) => {
      const id = await create(over);
      await runtime.startContainer(id);
      return id;
    };
    const exited = (id: string) => until(async () => !(await runtime.inspectContainer(id)).running);

    test("creates, starts, inspects and lists a kubelet container", async () => {
      const id = await create();
      expect((await runtime.inspectContainer(id)).state).toBe("CONTAINER_CREATED");
      await runtime.startContainer(id);
      await runtime.startContainer(id);
      const details = await runtime.inspectContainer(id);
      expect(details).toMatchObject({ id, running: true, state: "CONTAINER_RUNNING", exitCode: 0 });
      expect(details.name).toStartWith("k8s_app_");
      expect(Date.parse(details.startedAt!)).toBeGreaterThan(0);
      expect((await runtime.listContainers()).find((c) => c.id === id)).toMatchObject({
        state: "CONTAINER_RUNNING",
        labels: { [LABEL.podUid]: uid },
      });
    });

    test("runs a sandbox that lists as ready with its pod's metadata, and reports its status", async () => {
      const listed = (await runtime.listPodSandboxes({ podUid: uid })).find((s) => s.id === sandboxId);
      expect(listed).toMatchObject({
        id: sandboxId,
        state: "ready",
        metadata: { name: `${options.prefix}pod`, namespace: "default", uid, attempt: 0 },
        labels: { [LABEL.podUid]: uid },
      });
      expect(listed!.createdAt).toBeGreaterThan(Date.now() - 600_000);
      const status = await runtime.podSandboxStatus(sandboxId);
      expect(status).toMatchObject({ id: sandboxId, state: "ready", metadata: listed!.metadata });
      expect(typeof status.ipAddress).toBe("string");
    });

    test("lists sandboxes apart from containers: neither call sees the other's", async () => {
      const id = await create();
      expect((await runtime.listContainers({ podUid: uid })).map((c) => c.id)).not.toContain(sandboxId);
      expect((await runtime.listPodSandboxes({ podUid: uid })).map((s) => s.id)).not.toContain(id);
      expect(await rejection(runtime.inspectContainer(sandboxId))).toMatchObject({ code: "NotFound" });
      expect(await rejection(runtime.podSandboxStatus(id))).toMatchObject({ code: "NotFound" });
    });

    test("lists one pod's sandboxes when asked by pod uid, and only ready ones when asked by state", async () => {
      const other = `other-${uid}`;
      const id = await run(sandboxOf(other, `${options.prefix}filtered`));
      expect((await runtime.listPodSandboxes({ podUid: uid })).map((s) => s.id)).toEqual([sandboxId]);
      await runtime.stopPodSandbox(id);
      await until(async () => (await runtime.podSandboxStatus(id)).state === "notready");
      const ready = (await runtime.listPodSandboxes({ state: "ready" })).map((s) => s.id);
      expect(ready).toContain(sandboxId);
      expect(ready).not.toContain(id);
      expect((await runtime.listPodSandboxes({ podUid: other, state: "notready" })).map((s) => s.id)).toEqual([id]);
    });

    test("refuses a second sandbox for the same pod and attempt", async () => {
      expect(await rejection(run(sandbox))).toMatchObject({ code: "Conflict" });
    });

    test("stops a sandbox (again without error), then removes it (again without error) and lists it no more", async () => {
      const other = `gone-${uid}`;
      const id = await run(sandboxOf(other, `${options.prefix}gone`));
      await runtime.stopPodSandbox(id);
      await runtime.stopPodSandbox(id);
      await until(async () => (await runtime.podSandboxStatus(id)).state === "notready");
      await runtime.removePodSandbox(id);
      await runtime.removePodSandbox(id);
      expect(await runtime.listPodSandboxes({ podUid: other })).toEqual([]);
      expect(await rejection(runtime.podSandboxStatus(id))).toMatchObject({ code: "NotFound" });
    });

    test("names itself and its API version", async () => {
      const version = await runtime.version();
      expect(version.runtimeName).toMatch(/^[a-z][\w.-]*$/);
      expect(version.runtimeVersion).toBeTruthy();
      expect(version.runtimeApiVersion).toBeTruthy();
    });

    test("reports itself and its network ready", async () => {
      const { conditions } = await runtime.status();
      for (const type of ["RuntimeReady", "NetworkReady"])
        expect(conditions.find((c) => c.type === type)).toMatchObject({ status: true });
    });

    test("lists one pod's containers when asked by pod uid", async () => {
      const mine = await create();
      const otherSandbox = sandboxOf(`other-${uid}`, `${options.prefix}other`);
      const otherSandboxId = await run(otherSandbox);
      const other = await runtime.createContainer(
        otherSandboxId,
        testContainerConfig(otherSandbox, "other", 0, options.image, CONTRACT_SCRIPTS.idle.cmd),
        otherSandbox,
      );
      created.push(other);
      const listed = (await runtime.listContainers({ podUid: uid })).map((c) => c.id);
      expect(listed).toContain(mine);
      expect(listed).not.toContain(other);
    });

    test("refuses a second container with the same name and attempt in a sandbox", async () => {
      const first = config();
      created.push(await runtime.createContainer(sandboxId, first, sandbox));
      expect(await rejection(runtime.createContainer(sandboxId, first, sandbox))).toMatchObject({ code: "Conflict" });
    });

    test("refuses to create a container from a missing image", async () => {
      expect(await rejection(create({ image: { image: `${options.prefix}missing/image:0` } }))).toMatchObject({
        code: "NotFound",
      });
    });

    test("reports the exit code and finish time of a container that ended, and keeps listing it", async () => {
      const id = await started({ command: CONTRACT_SCRIPTS.finite.cmd });
      await exited(id);
      const details = await runtime.inspectContainer(id);
      expect(details).toMatchObject({ running: false, state: "CONTAINER_EXITED", exitCode: 3, oomKilled: false });
      // Docker may stamp a quick container's finish a hair before its start: compare loosely.
      expect(Math.abs(Date.parse(details.finishedAt!) - Date.parse(details.startedAt!))).toBeLessThan(5000);
      expect((await runtime.listContainers({ podUid: uid })).find((c) => c.id === id)?.state).toBe("CONTAINER_EXITED");
    });

    test("kills a container that ignores SIGTERM when the grace period ends; stopping again is fine", async () => {
      const id = await started();
      await runtime.stopContainer(id, 0);
      await runtime.stopContainer(id, 0);
      expect(await runtime.inspectContainer(id)).toMatchObject({ running: false, exitCode: 137 });
    });

    test("changes a running container's cpu and memory in place: the same container reports the new limits", async () => {
      const id = await started({
        linux: {
          resources: { cpu_period: 100_000, cpu_quota: 50_000, cpu_shares: 512, memory_limit_in_bytes: 64 * 2 ** 20 },
        },
      });
      const resized = { cpu_period: 100_000, cpu_quota: 20_000, cpu_shares: 204, memory_limit_in_bytes: 48 * 2 ** 20 };
      await runtime.updateContainerResources(id, resized);
      const details = await runtime.inspectContainer(id);
      expect(details).toMatchObject({ id, running: true });
      expect(details.resources).toEqual(resized);
    });

    test("removes a running container, and a removed one again without error", async () => {
      const id = await started();
      await runtime.removeContainer(id);
      await runtime.removeContainer(id);
      expect(await rejection(runtime.inspectContainer(id))).toMatchObject({ code: "NotFound" });
      expect((await runtime.listContainers()).some((c) => c.id === id)).toBe(false);
    });

    test("runs a command in a running container: stdout, stderr and exit code apart", async () => {
      const id = await started();
      expect(await runtime.exec(id, CONTRACT_SCRIPTS.finite.cmd)).toEqual(CONTRACT_SCRIPTS.finite.exec.result);
    });

    test("streams a command: stdout and stderr as written, then its exit code", async () => {
      const id = await started();
      const session = await runtime.execStream(id, CONTRACT_SCRIPTS.finite.cmd, { stdout: true, stderr: true });
      const output = { 1: "", 2: "" };
      for await (const chunk of session.output) output[chunk.stream] += new TextDecoder().decode(chunk.data);
      expect(await session.exit).toBe(CONTRACT_SCRIPTS.finite.exec.result.exitCode);
      session.close();
      expect(output).toEqual({
        1: CONTRACT_SCRIPTS.finite.exec.result.stdout,
        2: CONTRACT_SCRIPTS.finite.exec.result.stderr,
      });
    });

    test("gives up on a command that outlives its timeout", async () => {
      const id = await started();
      const before = Date.now();
      expect(await rejection(runtime.exec(id, CONTRACT_SCRIPTS.slow.cmd, { timeoutMs: 300 }))).toMatchObject({
        code: "ExecTimeout",
      });
      expect(Date.now() - before).toBeLessThan(2000);
    });

    test("refuses to run a command in a stopped container", async () => {
      const id = await started();
      await runtime.stopContainer(id, 0);
      expect(await rejection(runtime.exec(id, ["true"]))).toMatchObject({ code: "Conflict" });
    });

    test("returns the last lines of the logs with tail", async () => {
      const id = await started({ command: CONTRACT_SCRIPTS.finite.cmd });
      await exited(id);
      expect((await collect(runtime.logs(id))).split("\n").sort()).toEqual(["", "err", "out"]);
      expect((await collect(runtime.logs(id, { tail: 1 }))).split("\n").filter(Boolean)).toHaveLength(1);
    });

    test("follows the logs as they are written until aborted", async () => {
      const id = await started({ command: CONTRACT_SCRIPTS.ticking.cmd });
      const abort = new AbortController();
      let text = "";
      for await (const chunk of runtime.logs(id, { follow: true, signal: abort.signal })) {
        text += new TextDecoder().decode(chunk);
        if (text.includes("two")) abort.abort();
      }
      expect(text).toBe("one\ntwo\n");
    });

    test("ends a log follow when the container stops", async () => {
      const id = await started({ command: CONTRACT_SCRIPTS.ticking.cmd });
      const following = collect(runtime.logs(id, { follow: true }));
      await sleep(100);
      await runtime.stopContainer(id, 0);
      expect(await following).toStartWith("one\n");
    });

    test("reports a present image's id, tags and size, and a missing one as absent", async () => {
      const image = await runtime.imageStatus(options.image);
      expect(image?.id).toBeTruthy();
      expect(image!.repoTags.some((t) => t === options.image || t.endsWith(`/${options.image}`))).toBe(true);
      expect(image!.sizeBytes).toBeGreaterThan(0);
      expect(await runtime.imageStatus(`${options.prefix}never-pulled/nothing:0`)).toBeUndefined();
    });

    test("reports the image filesystem's mount point and the bytes images use there", async () => {
      const fs = await runtime.imageFsInfo();
      expect(fs.mountpoint).toStartWith("/");
      expect(fs.usedBytes).toBeGreaterThan(0);
      if (fs.inodesUsed !== undefined) expect(fs.inodesUsed).toBeGreaterThan(0);
    });

    test("lists images with the ones containers use marked, and will not remove those", async () => {
      await create();
      const imageId = (await runtime.imageStatus(options.image))?.id;
      // A container may name its image by digest (the CRI's image_ref after a pull): match by image id.
      const listed = (await runtime.listImages()).find((i) => i.id === imageId);
      expect(listed?.inUse).toBe(true);
      // containerd reports fully qualified names (docker.io/local/busybox:stable), Docker the short ones.
      expect(listed!.tags.some((t) => t === options.image || t.endsWith(`/${options.image}`))).toBe(true);
      expect(listed!.sizeBytes).toBeGreaterThan(0);
      expect(await rejection(runtime.removeImage(listed!.id))).toMatchObject({ code: "Conflict" });
      expect((await runtime.imageStatus(options.image))?.id).toBe(listed!.id);
      await runtime.removeImage(`sha256:${"0".repeat(64)}`); // missing: not an error
    });

    // Each step waits for its event: a relisting runtime (the CRI's PLEG) sees states, not every call.
    test("reports a created container's change, then its start, death and removal, with its labels", async () => {
      const abort = new AbortController();
      const seen: Array<{ id: string; type: LifecycleEventType }> = [];
      let wake = () => {};
      const watching = (async () => {
        for await (const event of runtime.events(abort.signal)) {
          if (event.labels[LABEL.podUid] !== uid) continue;
          expect(event.time).toBeGreaterThan(0);
          seen.push({ id: event.containerId, type: event.type });
          wake();
        }
      })();
      let id = "";
      const saw = (type: LifecycleEventType) =>
        new Promise<void>((resolve) => {
          wake = () => seen.some((e) => e.id === id && e.type === type) && resolve();
          wake();
        });
      await sleep(100);
      id = await create();
      await saw("ContainerChanged");
      await runtime.startContainer(id);
      await saw("ContainerStarted");
      await runtime.stopContainer(id, 0);
      await saw("ContainerDied");
      await runtime.removeContainer(id);
      await saw("ContainerRemoved");
      abort.abort();
      await watching;
      // Docker also reports the stop's kill and stop as changes; the life is the same on every runtime.
      const mine = seen.filter((e) => e.id === id).map((e) => e.type);
      expect(mine[0]).toBe("ContainerChanged");
      expect(mine.filter((t) => t !== "ContainerChanged")).toEqual([
        "ContainerStarted",
        "ContainerDied",
        "ContainerRemoved",
      ]);
    });

    test("ends the event stream cleanly when aborted", async () => {
      const abort = new AbortController();
      const watching = (async () => {
        for await (const _ of runtime.events(abort.signal));
      })();
      await sleep(50);
      abort.abort();
      await expect(watching).resolves.toBeUndefined();
    });
  });
}
