// Smoke test of the real services every other end-to-end test stands on.
import { expect, test } from "bun:test";
import { createDockerRuntime } from "../../lib/container/docker/docker.ts";
import { describeWithServices } from "../../lib/testing/services.ts";

describeWithServices("the test services", (services) => {
  test("the private Docker Engine answers and has no bridge network", async () => {
    const runtime = createDockerRuntime({ endpoint: services.dockerHost });
    expect((await runtime.version()).runtimeVersion).toBeTruthy();
    const networks = (await (
      await fetch("http://docker/networks", { unix: services.dockerHost.replace("unix://", "") } as RequestInit)
    ).json()) as Array<{ Name: string }>;
    expect(networks.map((n) => n.Name)).not.toContain("bridge");
  });

  test("the local busybox and pause images are present", async () => {
    const runtime = createDockerRuntime({ endpoint: services.dockerHost });
    expect((await runtime.imageStatus(services.busybox))?.id).toMatch(/^sha256:/);
    expect((await runtime.imageStatus(services.pause))?.id).toMatch(/^sha256:/);
  });

  test("etcd answers on loopback", async () => {
    const health = (await (await fetch(`${services.etcd}/health`)).json()) as { health: string };
    expect(health.health).toBe("true");
  });

  test("the registry serves the Docker Hub stand-ins", async () => {
    const tags = (await (await fetch(`http://${services.registry}/v2/library/busybox/tags/list`)).json()) as {
      tags: string[];
    };
    expect(tags.tags).toContain("1.35");
  });
});
