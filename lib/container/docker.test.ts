// The Docker runtime against the real daemon: the shared contract, plus what only Docker can show.
import { describe, expect, test } from "bun:test";
import { describeWithServices } from "../testing/services.ts";
import { createDockerRuntime, resolveDockerEndpoint } from "./docker.ts";
import { LABEL } from "./runtime.ts";
import { runtimeContract } from "./runtime-contract.ts";

describeWithServices("Docker runtime", (services) => {
  runtimeContract(() => createDockerRuntime({ endpoint: services.dockerHost }), { image: services.busybox, prefix: "rt-" });

  test("forces Docker's restart policy to no: restarts are the kubelet's decision", async () => {
    const runtime = createDockerRuntime({ endpoint: services.dockerHost });
    const id = await runtime.createContainer({ name: `k8s_app_rt-rp${Date.now()}_default_u_0`, Image: services.busybox, Labels: { [LABEL.podUid]: "u" }, HostConfig: { NetworkMode: "none", RestartPolicy: { Name: "no" } } });
    const inspected = await (await fetch(`http://docker/containers/${id}/json`, { unix: services.dockerHost.replace("unix://", "") } as RequestInit)).json() as { HostConfig: { RestartPolicy: { Name: string } } };
    expect(inspected.HostConfig.RestartPolicy.Name).toBe("no");
    await runtime.removeContainer(id);
  });

  test("demultiplexes logs and honours tail", async () => {
    const runtime = createDockerRuntime({ endpoint: services.dockerHost });
    const id = await runtime.createContainer({ name: `k8s_app_rt-logs${Date.now()}_default_u_0`, Image: services.busybox, Cmd: ["sh", "-c", "echo one; echo two >&2; echo three"], Labels: { [LABEL.podUid]: "u" }, HostConfig: { NetworkMode: "none" } });
    await runtime.startContainer(id);
    await Bun.sleep(500);
    let text = "";
    for await (const chunk of runtime.logs(id, { tail: 2 })) text += new TextDecoder().decode(chunk);
    expect(text.split("\n").filter(Boolean)).toHaveLength(2);
    expect(text).toContain("three");
    await runtime.removeContainer(id);
  });

  test("an unreachable daemon is RuntimeUnavailable at once", async () => {
    const runtime = createDockerRuntime({ endpoint: "unix:///nonexistent/docker.sock" });
    await expect(runtime.ping()).rejects.toMatchObject({ code: "RuntimeUnavailable" });
  });
});

describe("Docker endpoint", () => {
  test("is the flag, else $DOCKER_HOST, else the default socket", () => {
    expect(resolveDockerEndpoint("tcp://127.0.0.1:2375", { DOCKER_HOST: "unix:///x" })).toBe("tcp://127.0.0.1:2375");
    expect(resolveDockerEndpoint("", { DOCKER_HOST: "unix:///x" })).toBe("unix:///x");
    expect(resolveDockerEndpoint("", {})).toBe("unix:///var/run/docker.sock");
  });
});
