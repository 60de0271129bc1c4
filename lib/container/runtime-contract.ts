// One contract for every Runtime: the fake used by unit tests must behave like Docker where the
// sync loop depends on it. Run by lib/container/docker.test.ts and lib/testing/fake-runtime.test.ts.
import { afterAll, expect, test } from "bun:test";
import { LABEL, type ContainerCreateBody, type Runtime } from "./runtime.ts";

export function runtimeContract(make: () => Runtime, options: { image: string; prefix: string }): void {
  const runtime = make();
  const created: string[] = [];
  afterAll(async () => {
    for (const id of created) await runtime.removeContainer(id);
  });
  let seq = 0;
  const body = (over: Partial<ContainerCreateBody> = {}): ContainerCreateBody => ({
    name: `k8s_app_${options.prefix}${Date.now()}x${seq++}_default_uid-${options.prefix}_0`,
    Image: options.image,
    Cmd: ["sleep", "60"],
    Labels: { [LABEL.podUid]: `uid-${options.prefix}`, [LABEL.containerName]: "app" },
    HostConfig: { NetworkMode: "none" },
    ...over,
  });
  const create = async (over: Partial<ContainerCreateBody> = {}) => {
    const id = await runtime.createContainer(body(over));
    created.push(id);
    return id;
  };

  test("creates, starts, inspects and lists a kubelet container", async () => {
    const id = await create();
    expect((await runtime.inspectContainer(id)).state).toBe("created");
    await runtime.startContainer(id);
    const details = await runtime.inspectContainer(id);
    expect(details).toMatchObject({ id, running: true, state: "running" });
    expect(details.startedAt).toBeTruthy();
    expect((await runtime.listContainers()).find((c) => c.id === id)?.labels[LABEL.podUid]).toBe(`uid-${options.prefix}`);
  });

  test("never lists containers the kubelet did not create", async () => {
    const id = await create({ name: `someone-else-${options.prefix}${Date.now()}`, Labels: {} });
    expect((await runtime.listContainers()).some((c) => c.id === id)).toBe(false);
  });

  test("refuses a second container with the same name", async () => {
    const first = body();
    created.push(await runtime.createContainer(first));
    await expect(runtime.createContainer(first)).rejects.toMatchObject({ code: "Conflict" });
  });

  test("stops a running container (and a stopped one again) and removes it, twice without error", async () => {
    const id = await create();
    await runtime.startContainer(id);
    await runtime.stopContainer(id, 0);
    await runtime.stopContainer(id, 0);
    const details = await runtime.inspectContainer(id);
    expect(details.running).toBe(false);
    expect(details.finishedAt).toBeTruthy();
    await runtime.removeContainer(id);
    await runtime.removeContainer(id);
    await expect(runtime.inspectContainer(id)).rejects.toMatchObject({ code: "NotFound" });
  });

  test("runs commands in a running container and reports their exit code", async () => {
    const id = await create();
    await runtime.startContainer(id);
    expect((await runtime.exec(id, ["true"])).exitCode).toBe(0);
  });

  test("knows which images are present", async () => {
    expect(await runtime.imageId(options.image)).toBeTruthy();
    expect(await runtime.imageId(`never-pulled-${options.prefix}x/nothing:0`)).toBeUndefined();
  });

  test("reports a die event when a container stops", async () => {
    const id = await create();
    const abort = new AbortController();
    const seen: string[] = [];
    const watching = (async () => {
      for await (const event of runtime.events(abort.signal)) {
        if (event.containerId === id) seen.push(event.action);
        if (event.action === "die" && event.containerId === id) break;
      }
    })();
    await Bun.sleep(100);
    await runtime.startContainer(id);
    await runtime.stopContainer(id, 0);
    await watching;
    abort.abort();
    expect(seen).toContain("die");
  });
}
