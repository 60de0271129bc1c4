// One contract for every Runtime: the fake used by unit tests must behave like Docker where the
// sync loop depends on it. Run by lib/container/docker.test.ts and lib/testing/fake-runtime.test.ts.
import { afterAll, describe, expect, test } from "bun:test";
import { setTimeout as sleep } from "node:timers/promises";
import type { FakeProgram } from "../testing/fake-runtime.ts";
import { LABEL, type ContainerCreateBody, type ExecResult, type Runtime } from "./runtime.ts";

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

async function collect(chunks: AsyncIterable<Uint8Array>): Promise<string> {
  let text = "";
  for await (const chunk of chunks) text += new TextDecoder().decode(chunk);
  return text;
}

/** The shared suite: `image` must hold busybox; `prefix` marks the containers it creates (and removes). */
export function runtimeContract(
  name: string,
  makeRuntime: () => Runtime,
  options: { image: string; prefix: string },
): void {
  describe(name, () => {
    const runtime = makeRuntime();
    const created: string[] = [];
    afterAll(async () => {
      for (const id of created) await runtime.removeContainer(id);
    });
    let seq = 0;
    const uid = `uid-${options.prefix}${Date.now()}`;
    const body = (over: Partial<ContainerCreateBody> = {}): ContainerCreateBody => ({
      name: `k8s_app_${options.prefix}${Date.now()}x${seq++}_default_${uid}_0`,
      Image: options.image,
      Cmd: CONTRACT_SCRIPTS.idle.cmd,
      Labels: { [LABEL.podUid]: uid, [LABEL.containerName]: "app" },
      HostConfig: { NetworkMode: "none" },
      ...over,
    });
    const create = async (over: Partial<ContainerCreateBody> = {}) => {
      const id = await runtime.createContainer(body(over));
      created.push(id);
      return id;
    };
    const started = async (over: Partial<ContainerCreateBody> = {}) => {
      const id = await create(over);
      await runtime.startContainer(id);
      return id;
    };
    const exited = (id: string) => until(async () => !(await runtime.inspectContainer(id)).running);

    test("creates, starts, inspects and lists a kubelet container", async () => {
      const id = await create();
      expect((await runtime.inspectContainer(id)).state).toBe("created");
      await runtime.startContainer(id);
      await runtime.startContainer(id);
      const details = await runtime.inspectContainer(id);
      expect(details).toMatchObject({ id, running: true, state: "running", exitCode: 0 });
      expect(details.name).toStartWith("k8s_app_");
      expect(Date.parse(details.startedAt!)).toBeGreaterThan(0);
      expect((await runtime.listContainers()).find((c) => c.id === id)).toMatchObject({
        state: "running",
        labels: { [LABEL.podUid]: uid },
      });
    });

    test("never lists containers the kubelet did not create", async () => {
      const strangers = [
        await create({ name: `${options.prefix}stranger${Date.now()}`, Labels: {} }),
        await create({ name: `k8s_app_${options.prefix}nolabel${Date.now()}_default_x_0`, Labels: {} }),
        await create({ name: `${options.prefix}notk8s${Date.now()}`, Labels: { [LABEL.podUid]: uid } }),
      ];
      const listed = (await runtime.listContainers()).map((c) => c.id);
      expect(strangers.filter((id) => listed.includes(id))).toEqual([]);
    });

    test("lists one pod's containers when asked by pod uid", async () => {
      const mine = await create();
      const other = await create({
        name: `k8s_app_${options.prefix}other${Date.now()}_default_other-${uid}_0`,
        Labels: { [LABEL.podUid]: `other-${uid}` },
      });
      const listed = (await runtime.listContainers({ podUid: uid })).map((c) => c.id);
      expect(listed).toContain(mine);
      expect(listed).not.toContain(other);
    });

    test("refuses a second container with the same name", async () => {
      const first = body();
      created.push(await runtime.createContainer(first));
      await expect(runtime.createContainer(first)).rejects.toMatchObject({ code: "Conflict" });
    });

    test("refuses to create a container from a missing image", async () => {
      await expect(runtime.createContainer(body({ Image: `${options.prefix}missing/image:0` }))).rejects.toMatchObject({
        code: "NotFound",
      });
    });

    test("reports the exit code and finish time of a container that ended, and keeps listing it", async () => {
      const id = await started({ Cmd: CONTRACT_SCRIPTS.finite.cmd });
      await exited(id);
      const details = await runtime.inspectContainer(id);
      expect(details).toMatchObject({ running: false, state: "exited", exitCode: 3, oomKilled: false });
      // Docker may stamp a quick container's finish a hair before its start: compare loosely.
      expect(Math.abs(Date.parse(details.finishedAt!) - Date.parse(details.startedAt!))).toBeLessThan(5000);
      expect((await runtime.listContainers({ podUid: uid })).find((c) => c.id === id)?.state).toBe("exited");
    });

    test("kills a container that ignores SIGTERM when the grace period ends; stopping again is fine", async () => {
      const id = await started();
      await runtime.stopContainer(id, 0);
      await runtime.stopContainer(id, 0);
      expect(await runtime.inspectContainer(id)).toMatchObject({ running: false, exitCode: 137 });
    });

    test("removes a running container, and a removed one again without error", async () => {
      const id = await started();
      await runtime.removeContainer(id);
      await runtime.removeContainer(id);
      await expect(runtime.inspectContainer(id)).rejects.toMatchObject({ code: "NotFound" });
      expect((await runtime.listContainers()).some((c) => c.id === id)).toBe(false);
    });

    test("runs a command in a running container: stdout, stderr and exit code apart", async () => {
      const id = await started();
      expect(await runtime.exec(id, CONTRACT_SCRIPTS.finite.cmd)).toEqual(CONTRACT_SCRIPTS.finite.exec.result);
    });

    test("gives up on a command that outlives its timeout", async () => {
      const id = await started();
      const before = Date.now();
      await expect(runtime.exec(id, CONTRACT_SCRIPTS.slow.cmd, { timeoutMs: 300 })).rejects.toMatchObject({
        code: "ExecTimeout",
      });
      expect(Date.now() - before).toBeLessThan(2000);
    });

    test("refuses to run a command in a stopped container", async () => {
      const id = await started();
      await runtime.stopContainer(id, 0);
      await expect(runtime.exec(id, ["true"])).rejects.toMatchObject({ code: "Conflict" });
    });

    test("returns the last lines of the logs with tail", async () => {
      const id = await started({ Cmd: CONTRACT_SCRIPTS.finite.cmd });
      await exited(id);
      expect((await collect(runtime.logs(id))).split("\n").sort()).toEqual(["", "err", "out"]);
      expect((await collect(runtime.logs(id, { tail: 1 }))).split("\n").filter(Boolean)).toHaveLength(1);
    });

    test("follows the logs as they are written until aborted", async () => {
      const id = await started({ Cmd: CONTRACT_SCRIPTS.ticking.cmd });
      const abort = new AbortController();
      let text = "";
      for await (const chunk of runtime.logs(id, { follow: true, signal: abort.signal })) {
        text += new TextDecoder().decode(chunk);
        if (text.includes("two")) abort.abort();
      }
      expect(text).toBe("one\ntwo\n");
    });

    test("ends a log follow when the container stops", async () => {
      const id = await started({ Cmd: CONTRACT_SCRIPTS.ticking.cmd });
      const following = collect(runtime.logs(id, { follow: true }));
      await sleep(100);
      await runtime.stopContainer(id, 0);
      expect(await following).toStartWith("one\n");
    });

    test("knows which images are present", async () => {
      expect(await runtime.imageId(options.image)).toBeTruthy();
      expect(await runtime.imageId(`${options.prefix}never-pulled/nothing:0`)).toBeUndefined();
    });

    test("lists images with the ones containers use marked, and will not remove those", async () => {
      const id = await create();
      const imageId = (await runtime.inspectContainer(id)).imageId;
      const listed = (await runtime.listImages()).find((i) => i.id === imageId);
      expect(listed).toMatchObject({ inUse: true, tags: expect.arrayContaining([options.image]) });
      expect(listed!.sizeBytes).toBeGreaterThan(0);
      await expect(runtime.removeImage(imageId)).rejects.toMatchObject({ code: "Conflict" });
      expect(await runtime.imageId(options.image)).toBe(imageId);
      await runtime.removeImage(`sha256:${"0".repeat(64)}`); // missing: not an error
    });

    test("reports create, start, die and destroy events with the container's labels", async () => {
      const abort = new AbortController();
      const seen: Array<{ id: string; action: string }> = [];
      const watching = (async () => {
        for await (const event of runtime.events(abort.signal)) {
          if (event.labels[LABEL.podUid] !== uid) continue;
          seen.push({ id: event.containerId, action: event.action });
          expect(event.time).toBeGreaterThan(0);
          if (event.action === "destroy") break;
        }
      })();
      await sleep(100);
      const id = await create();
      await runtime.startContainer(id);
      await runtime.stopContainer(id, 0);
      await runtime.removeContainer(id);
      await watching;
      abort.abort();
      const actions = seen
        .filter((e) => e.id === id && ["create", "start", "die", "destroy"].includes(e.action))
        .map((e) => e.action);
      expect(actions).toEqual(["create", "start", "die", "destroy"]);
    });

    test("ends the event stream cleanly when aborted", async () => {
      const abort = new AbortController();
      const watching = (async () => {
        for await (const _ of runtime.events(abort.signal));
      })();
      await sleep(50);
      abort.abort();
      await watching;
    });
  });
}
