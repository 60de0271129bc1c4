import { describe, expect, test } from "bun:test";
import { testContainerConfig, testSandboxConfig } from "../../testing/cri-configs.ts";
import { LABEL } from "../runtime.ts";
import { createDockerContainers, type ContainerEngine } from "./docker-containers.ts";
import type { EngineContainerInspect, EngineContainerItem } from "./docker-engine.ts";
import type { ContainerCreateBody } from "./docker-shim.ts";

const PAUSE = "registry.k8s.io/pause:3.9";
const engineError = (statusCode: number, message: string) =>
  Object.assign(new Error(`(HTTP code ${statusCode}) ${message}`), { statusCode, json: { message } });

/** An inspected container with these labels and state fields. */
function inspected(id: string, labels: Record<string, string>, state: Partial<EngineContainerInspect["State"]> = {}) {
  return {
    Id: id,
    Name: `/k8s_x_${id}_0`,
    Created: "2026-11-23T13:00:00Z",
    Image: "sha256:img",
    LogPath: "",
    Config: { Labels: labels, Image: "busybox", Tty: false },
    State: {
      Status: "running",
      Running: true,
      ExitCode: 0,
      StartedAt: "2026-11-23T13:00:01Z",
      FinishedAt: "0001-01-01T00:00:00Z",
      OOMKilled: false,
      Error: "",
      Pid: 42,
      ...state,
    },
    HostConfig: { Memory: 1024 },
    NetworkSettings: { Networks: { bridge: { IPAddress: "172.17.0.5" } } },
  };
}

/**
 * A fake Engine: `answers` decides what each call answers (by call name, in order; a value or an error), `calls`
 * records every call and `created` every create body.
 */
function fakeEngine(answers: Record<string, unknown[]> = {}) {
  const calls: string[] = [];
  const created: ContainerCreateBody[] = [];
  const answer = async (name: string, fallback: unknown) => {
    const next = answers[name]?.length ? answers[name]!.shift() : fallback;
    if (next instanceof Error) throw next;
    return next;
  };
  const record =
    (name: string, fallback: unknown = undefined) =>
    (id: unknown) => {
      calls.push(`${name} ${typeof id === "string" ? id : JSON.stringify(id)}`);
      return answer(name, fallback);
    };
  const engine = {
    createContainer: (body: ContainerCreateBody) => {
      calls.push(`createContainer ${body.name}`);
      created.push(body);
      return answer("createContainer", { id: `id-${created.length}` });
    },
    startContainer: record("startContainer"),
    stopContainer: record("stopContainer"),
    removeContainer: record("removeContainer"),
    inspectContainer: record("inspectContainer"),
    listContainers: record("listContainers", []),
    updateContainer: record("updateContainer"),
    containerStats: record("containerStats"),
  } as unknown as ContainerEngine;
  return { engine, calls, created };
}

function containers(engine: ContainerEngine, timeoutMs = 1000) {
  const pulls: string[] = [];
  const docker = createDockerContainers(
    { timeoutMs, shim: { podInfraImage: PAUSE, podNetworkMode: "none" } },
    { engine, ensureSandboxImage: async () => void pulls.push(PAUSE), seccompJson: async () => undefined },
  );
  return { docker, pulls };
}

const sandbox = testSandboxConfig("u1", "web");

describe("Docker sandboxes", () => {
  test("a sandbox whose image is present is one create and one start, no image lookup", async () => {
    const { engine, calls } = fakeEngine();
    const { docker, pulls } = containers(engine);
    expect(await docker.runPodSandbox(sandbox)).toBe("id-1");
    expect(calls).toEqual(["createContainer k8s_POD_web_default_u1_0", "startContainer id-1"]);
    expect(pulls).toEqual([]);
  });

  test("a create that answers the image is missing gets the sandbox image, then creates again", async () => {
    const { engine, calls } = fakeEngine({ createContainer: [engineError(404, `No such image: ${PAUSE}`)] });
    const { docker, pulls } = containers(engine);
    expect(await docker.runPodSandbox(sandbox)).toBe("id-2");
    expect(calls).toEqual([
      "createContainer k8s_POD_web_default_u1_0",
      "createContainer k8s_POD_web_default_u1_0",
      "startContainer id-2",
    ]);
    expect(pulls).toEqual([PAUSE]);
  });

  test("a create refused for another reason is not retried and gets no image", async () => {
    const { engine, calls } = fakeEngine({ createContainer: [engineError(409, "name already in use")] });
    const { docker, pulls } = containers(engine);
    await expect(docker.runPodSandbox(sandbox)).rejects.toMatchObject({ code: "Conflict" });
    expect(calls).toHaveLength(1);
    expect(pulls).toEqual([]);
  });

  test("a runtime handler other than runc is refused before any Engine call", async () => {
    const { engine, calls } = fakeEngine();
    await expect(containers(engine).docker.runPodSandbox(sandbox, "kata")).rejects.toThrow(
      'RuntimeHandler "kata" not supported',
    );
    expect(calls).toEqual([]);
  });

  test("a sandbox's status is its pause container's; another container's id is NotFound", async () => {
    const pause = inspected("p1", { ...sandbox.labels });
    const app = inspected("c1", { [LABEL.containerName]: "app" });
    const { engine } = fakeEngine({ inspectContainer: [pause, app] });
    const { docker } = containers(engine);
    expect(await docker.podSandboxStatus("p1")).toMatchObject({ id: "p1", state: "ready", ipAddress: "172.17.0.5" });
    await expect(docker.podSandboxStatus("c1")).rejects.toMatchObject({
      code: "NotFound",
      message: "cannot inspect pod sandbox c1: c1 is not a pod sandbox",
    });
  });
});

describe("Docker containers", () => {
  test("a container is one create, with Docker's restart policy no, and no image inspect", async () => {
    const { engine, calls, created } = fakeEngine();
    const config = testContainerConfig(sandbox, "app", 0, "busybox", ["sleep", "60"]);
    expect(await containers(engine).docker.createContainer("p1", config, sandbox)).toBe("id-1");
    expect(calls).toEqual(["createContainer k8s_app_web_default_u1_0"]);
    expect(created[0]!.HostConfig).toMatchObject({ NetworkMode: "container:p1", RestartPolicy: { Name: "no" } });
  });

  test("starting a started container and stopping a stopped or gone one are done", async () => {
    const { engine } = fakeEngine({
      startContainer: [engineError(304, "already started")],
      stopContainer: [engineError(304, "already stopped"), engineError(404, "gone")],
    });
    const { docker } = containers(engine);
    await docker.startContainer("c1");
    await docker.stopContainer("c1", 10);
    await docker.stopContainer("c1", 10);
  });

  test("a stop's deadline is the request timeout plus the grace period", async () => {
    const engine = { ...fakeEngine().engine, stopContainer: () => new Promise<never>(() => {}) };
    await expect(containers(engine, 5).docker.stopContainer("c1", 1)).rejects.toMatchObject({
      code: "RuntimeUnavailable",
      message: "cannot stop container c1: the Docker Engine did not answer within 1005 ms",
    });
  });

  test("removing a gone container or one already being removed is done; another conflict is not", async () => {
    const { engine } = fakeEngine({
      removeContainer: [
        engineError(404, "No such container"),
        engineError(409, "removal of container c1 is already in progress"),
        engineError(409, "container is paused"),
      ],
    });
    const { docker } = containers(engine);
    await docker.removeContainer("c1");
    await docker.removePodSandbox("c1");
    await expect(docker.removeContainer("c1")).rejects.toMatchObject({ code: "Conflict" });
  });

  test("lists only the kubelet's containers, never a sandbox, with the sandbox their network joins", async () => {
    const item = (id: string, name: string, labels: Record<string, string>): EngineContainerItem => ({
      Id: id,
      Names: [name],
      Image: "busybox",
      ImageID: "sha256:b",
      Labels: labels,
      State: "exited",
      Created: 2,
      HostConfig: { NetworkMode: "container:p1" },
    });
    const { engine, calls } = fakeEngine({
      listContainers: [
        [
          item("c1", "/k8s_app_web_default_u1_0", { [LABEL.containerName]: "app" }),
          item("p1", "/k8s_POD_web_default_u1_0", { [LABEL.containerName]: "POD" }),
          item("x1", "/app", { [LABEL.containerName]: "app" }),
        ],
      ],
    });
    expect(await containers(engine).docker.listContainers({ podUid: "u1" })).toEqual([
      {
        id: "c1",
        name: "k8s_app_web_default_u1_0",
        podSandboxId: "p1",
        labels: { [LABEL.containerName]: "app" },
        image: "busybox",
        imageId: "sha256:b",
        state: "CONTAINER_EXITED",
        createdAt: 2000,
      },
    ]);
    expect(calls).toEqual([
      "listContainers " + JSON.stringify({ all: true, size: false, filters: { label: [`${LABEL.podUid}=u1`] } }),
    ]);
  });

  test("inspecting a container reads its state; a sandbox's id is NotFound", async () => {
    const app = inspected("c1", { [LABEL.containerName]: "app" }, { Status: "exited", Running: false, ExitCode: 3 });
    const { engine } = fakeEngine({ inspectContainer: [app, inspected("p1", { ...sandbox.labels })] });
    const { docker } = containers(engine);
    expect(await docker.inspectContainer("c1")).toMatchObject({
      state: "CONTAINER_EXITED",
      exitCode: 3,
      startedAt: "2026-11-23T13:00:01Z",
      finishedAt: undefined,
      resources: { memory_limit_in_bytes: 1024, cpu_shares: 0 },
    });
    await expect(docker.inspectContainer("p1")).rejects.toMatchObject({ code: "NotFound" });
  });

  test("an update sends the cpu fields, and memory with swap only when a memory limit is set", async () => {
    const { engine, calls } = fakeEngine();
    const { docker } = containers(engine);
    const bodies: unknown[] = [];
    engine.updateContainer = async (_id, body) => void bodies.push(body);
    await docker.updateContainerResources("c1", {
      cpu_shares: 2,
      cpu_period: 100000,
      cpu_quota: 50000,
      memory_limit_in_bytes: 0,
    });
    await docker.updateContainerResources("c1", {
      cpu_shares: 0,
      cpu_period: 0,
      cpu_quota: 0,
      memory_limit_in_bytes: 64,
    });
    expect(bodies).toEqual([
      { CpuShares: 2, CpuPeriod: 100000, CpuQuota: 50000 },
      { CpuShares: 0, CpuPeriod: 0, CpuQuota: 0, Memory: 64, MemorySwap: 64 },
    ]);
    expect(calls).toEqual([]);
  });

  test("an update with the CPU manager's cpuset sends CpusetCpus, the rest at 0 (left as they are)", async () => {
    const { engine } = fakeEngine();
    const { docker } = containers(engine);
    const bodies: unknown[] = [];
    engine.updateContainer = async (_id, body) => void bodies.push(body);
    const zero = { cpu_shares: 0, cpu_period: 0, cpu_quota: 0, memory_limit_in_bytes: 0 };
    await docker.updateContainerResources("c1", { ...zero, cpuset_cpus: "0-1", cpuset_mems: "0" });
    expect(bodies).toEqual([{ CpuShares: 0, CpuPeriod: 0, CpuQuota: 0, CpusetCpus: "0-1", CpusetMems: "0" }]);
  });

  test("one stats sample: the working set is the usage less inactive_file (cgroup v2); a bare sample reads zeros", async () => {
    const v2 = { read: "t1", memory_stats: { usage: 100, stats: { inactive_file: 30 } } };
    const { engine, calls } = fakeEngine({ containerStats: [v2, { read: "t2" }] });
    const { docker } = containers(engine);
    expect(await docker.stats("c1")).toMatchObject({ time: "t1", memoryUsageBytes: 100, memoryWorkingSetBytes: 70 });
    expect(Object.values(await docker.stats("c1")).filter((v) => v !== 0)).toEqual(["t2"]);
    expect(calls).toEqual(["containerStats c1", "containerStats c1"]);
  });
});
