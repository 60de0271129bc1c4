import { describe, expect, test } from "bun:test";
import { createDockerService, type ServiceEngine } from "./docker-service.ts";
import type { EngineInfo } from "./docker-engine.ts";

const INFO: EngineInfo = {
  OperatingSystem: "Debian",
  KernelVersion: "6.1.0",
  NCPU: 2,
  MemTotal: 1024,
  Name: "node-1",
  CgroupDriver: "systemd",
  DockerRootDir: "/var/lib/docker",
};

/** A fake Engine answering /version and /info (the first `failures` /info calls with a 500), counting the calls. */
function fakeEngine(failures = 0) {
  const calls: string[] = [];
  const engine: ServiceEngine = {
    version: async () => (calls.push("version"), { Version: "27.3.1", ApiVersion: "1.47" }),
    info: async () => {
      calls.push("info");
      if (failures-- > 0) throw Object.assign(new Error("busy"), { statusCode: 500 });
      return INFO;
    },
  };
  return { engine, calls };
}

const service = (engine: ServiceEngine) =>
  createDockerService({ timeoutMs: 1000, sandboxImage: "registry.k8s.io/pause:3.9" }, { engine });

describe("the Docker runtime service", () => {
  test("reads the machine's facts from /info once, however often and however many at once ask", async () => {
    const { engine, calls } = fakeEngine();
    const docker = service(engine);
    const answers = await Promise.all([docker.machineInfo(), docker.machineInfo()]);
    await docker.machineInfo();
    expect(answers[0]).toEqual({
      os: "Debian",
      kernelVersion: "6.1.0",
      cpus: 2,
      memoryBytes: 1024,
      hostname: "node-1",
      cgroupDriver: "systemd",
    });
    expect(calls).toEqual(["info"]);
  });

  test("keeps no failed /info: the next ask reads it again", async () => {
    const { engine, calls } = fakeEngine(1);
    const docker = service(engine);
    await expect(docker.machineInfo()).rejects.toMatchObject({
      code: "RuntimeError",
      message: "cannot read the Docker Engine's info: busy",
    });
    expect((await docker.machineInfo()).cpus).toBe(2);
    expect(calls).toEqual(["info", "info"]);
  });

  test("info() reads /info anew each time (the image filesystem's root is not cached with the machine)", async () => {
    const { engine, calls } = fakeEngine();
    const docker = service(engine);
    await docker.machineInfo();
    expect((await docker.info()).DockerRootDir).toBe("/var/lib/docker");
    await docker.info();
    expect(calls).toEqual(["info", "info", "info"]);
  });

  test("is ready while the Engine answers its version, and names the shim's sandbox image", async () => {
    const { engine, calls } = fakeEngine();
    const docker = service(engine);
    expect(await docker.version()).toEqual({
      runtimeName: "docker",
      runtimeVersion: "27.3.1",
      runtimeApiVersion: "1.47",
    });
    expect(await docker.status()).toEqual({
      conditions: [
        { type: "RuntimeReady", status: true, reason: "", message: "" },
        { type: "NetworkReady", status: true, reason: "", message: "" },
      ],
      sandboxImage: "registry.k8s.io/pause:3.9",
    });
    expect(calls).toEqual(["version", "version"]);
  });

  test("a status the Engine does not answer throws RuntimeUnavailable, as a CRI runtime's Status", async () => {
    const engine: ServiceEngine = {
      version: async () => Promise.reject(Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" })),
      info: async () => INFO,
    };
    await expect(service(engine).status()).rejects.toMatchObject({ code: "RuntimeUnavailable" });
  });
});
