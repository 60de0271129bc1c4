// The Docker runtime against the real daemon: the shared contract, plus what only Docker can show.
import { afterAll, describe, expect, test } from "bun:test";
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer as createHttpServer } from "node:http";
import { createServer as createNetServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describeWithServices } from "../../testing/services.ts";
import { startDockerProxy } from "../../testing/docker-proxy.ts";
import { createDockerRuntime, KEPT_ENGINE_CONNECTIONS, resolveDockerEndpoint } from "./docker.ts";
import type { ContainerConfig } from "../cri-types.ts";
import { LABEL } from "../runtime.ts";
import { testContainerConfig, testSandboxConfig } from "../../testing/cri-configs.ts";
import { runtimeContract } from "../../testing/runtime-contract.ts";
import { portForwardContract } from "../../testing/port-forward-contract.ts";

const root = join(import.meta.dir, "../../..");

describeWithServices("Docker runtime", (services) => {
  const make = () =>
    createDockerRuntime({
      endpoint: services.dockerHost,
      shim: { podInfraImage: services.pause, podNetworkMode: "none" },
    });
  runtimeContract("Docker runtime contract", make, { image: services.busybox, prefix: "rt-" });
  portForwardContract("Docker port forward", make, { image: services.busybox, prefix: "rt-" });

  const runtime = make();
  const created: string[] = [];
  const sandbox = testSandboxConfig(`rt-u${Date.now()}`, "rt-d");
  let sandboxId: string | undefined;
  afterAll(async () => {
    for (const id of created) await runtime.removeContainer(id);
    if (sandboxId) await runtime.removeContainer(sandboxId);
  });
  let seq = 0;
  const run = async (command = ["sleep", "60"], over: Partial<ContainerConfig> = {}) => {
    sandboxId ??= await runtime.runPodSandbox(sandbox);
    const config = testContainerConfig(sandbox, "app", seq++, services.busybox, command, over);
    const id = await runtime.createContainer(sandboxId, config, sandbox);
    created.push(id);
    await runtime.startContainer(id);
    return id;
  };
  const docker = (...args: string[]) =>
    execFileSync("docker", ["-H", services.dockerHost, ...args], { encoding: "utf8" }).trim();
  /** Follows a container's log until `line` has been written. */
  const logLine = async (id: string, line: string) => {
    const abort = new AbortController();
    let text = "";
    for await (const chunk of runtime.logs(id, { follow: true, signal: abort.signal })) {
      text += new TextDecoder().decode(chunk);
      if (text.includes(`${line}\n`)) break;
    }
    abort.abort();
    expect(text).toContain(line);
  };

  test("a listing of every container is the PLEG's relist, a listing of one pod's is not", async () => {
    let relists = 0;
    const watched = createDockerRuntime({
      endpoint: services.dockerHost,
      shim: { podInfraImage: services.pause, podNetworkMode: "none" },
      plegHealth: { relisted: () => void relists++, streaming: () => {} },
    });
    await watched.listContainers({ podUid: "rt-none" });
    expect(relists).toBe(0);
    await watched.listContainers();
    expect(relists).toBe(1);
  });

  test("each listing of every container is observed as a PLEG relist (duration, then the interval since the last), one pod's is not", async () => {
    const observed: Array<[number, number | undefined]> = [];
    const watched = createDockerRuntime({
      endpoint: services.dockerHost,
      shim: { podInfraImage: services.pause, podNetworkMode: "none" },
      relisted: (duration, interval) => void observed.push([duration, interval]),
    });
    await watched.listContainers({ podUid: "rt-none" });
    expect(observed).toEqual([]);
    await watched.listContainers();
    await watched.listContainers();
    expect(observed).toHaveLength(2);
    expect(observed[0]![1]).toBeUndefined();
    expect(observed[1]![1]).toBeGreaterThanOrEqual(observed[0]![0]);
    expect(observed.every(([duration]) => duration > 0)).toBe(true);
  });

  test("gives the sandbox and its containers Docker's restart policy no: restarts are the kubelet's decision", async () => {
    const id = await run();
    expect(docker("inspect", "-f", "{{.HostConfig.RestartPolicy.Name}}", id, sandboxId!)).toBe("no\nno");
  });

  test("never lists a container the kubelet does not own, even one named like its own", async () => {
    const name = `k8s_app_rt-foreign${Date.now()}_default_x_0`;
    docker("create", "--name", name, "--network", "none", services.busybox, "sleep", "1");
    try {
      expect((await runtime.listContainers()).some((c) => c.name === name)).toBe(false);
    } finally {
      docker("rm", "-f", name);
    }
  });

  test("waits the grace period before killing, and a container that handles SIGTERM exits at once", async () => {
    const stubborn = await run();
    let started = Date.now();
    await runtime.stopContainer(stubborn, 1);
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
    expect((await runtime.inspectContainer(stubborn)).exitCode).toBe(137);
    const polite = await run(["sh", "-c", "trap 'exit 0' TERM; echo trapped; sleep 60 & wait"]);
    await logLine(polite, "trapped"); // the trap is set: SIGTERM now ends it
    started = Date.now();
    await runtime.stopContainer(polite, 10);
    expect(Date.now() - started).toBeLessThan(5000);
    expect((await runtime.inspectContainer(polite)).exitCode).toBe(0);
  });

  test("returns raw logs for a TTY container, and lines with timestamps on request", async () => {
    // It exits after its one line, so a followed read ends when the whole log has been read.
    const id = await run(["sh", "-c", "echo tty"], { tty: true });
    let text = "";
    for await (const chunk of runtime.logs(id, { timestamps: true, follow: true }))
      text += new TextDecoder().decode(chunk);
    expect(text).toMatch(/^\d{4}-\d\d-\d\dT\S+ tty\r?\n$/);
  });

  test("reads one sample of a running container's stats", async () => {
    const stats = await runtime.stats(await run());
    expect(stats.pids).toBeGreaterThanOrEqual(1);
    expect(stats.memoryUsageBytes).toBeGreaterThan(0);
    expect(Date.parse(stats.time)).toBeGreaterThan(0);
  });

  test("reports the engine's version and the host's resources", async () => {
    expect((await runtime.version()).runtimeVersion).toMatch(/^\d+\./);
    const info = await runtime.machineInfo();
    expect(info.cpus).toBeGreaterThan(0);
    expect(info.memoryBytes).toBeGreaterThan(0);
  });

  test("fails a pull the registry cannot serve with ImagePullFailed and the daemon's reason", async () => {
    await expect(runtime.pullImage(`${services.registry}/rt-missing/nothing:${Date.now()}`)).rejects.toMatchObject({
      code: "ImagePullFailed",
      message: expect.stringMatching(/not found|manifest unknown/i),
    });
  });

  test("runs a sandbox from a sandbox image it does not have yet, pulling it itself (the dockershim's way)", async () => {
    const pause = `${services.registry}/rt-pause/pause:${Date.now()}`;
    for (const args of [
      ["tag", services.pause, pause],
      ["push", pause],
      ["rmi", pause],
    ])
      execFileSync("docker", ["-H", services.dockerHost, ...args], { stdio: "ignore" });
    const shim = createDockerRuntime({
      endpoint: services.dockerHost,
      shim: { podInfraImage: pause, podNetworkMode: "none" },
    });
    expect(await shim.imageStatus(pause)).toBeUndefined();
    expect((await shim.status()).sandboxImage).toBe(pause);
    const id = await shim.runPodSandbox(testSandboxConfig(`rt-pull-u${Date.now()}`, "rt-pull"));
    try {
      expect((await shim.podSandboxStatus(id)).state).toBe("ready");
      expect(await shim.imageStatus(pause)).toBeDefined();
    } finally {
      await shim.removePodSandbox(id);
      execFileSync("docker", ["-H", services.dockerHost, "rmi", pause], { stdio: "ignore" });
    }
  });

  test("runs a sandbox whose image is present with one create and one start: no image inspect before them", async () => {
    const dir = mkdtempSync(join(tmpdir(), "docker-calls-"));
    const proxy = await startDockerProxy(join(dir, "docker.sock"), services.dockerHost);
    try {
      const counted = createDockerRuntime({
        endpoint: proxy.endpoint,
        shim: { podInfraImage: services.pause, podNetworkMode: "none" },
      });
      const id = await counted.runPodSandbox(testSandboxConfig(`rt-calls-u${Date.now()}`, "rt-calls"));
      created.push(id);
      const calls = proxy.passed().map((line) => line.replace(/\?\S*| HTTP\/1\.[01]$/g, "").replace(id, "<id>"));
      expect(calls).toEqual(["POST /containers/create", "POST /containers/<id>/start"]);
    } finally {
      await proxy.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("streams exec, logs and events the same under deno and a bun-compiled binary", () => {
    const script = join(root, "lib/testing/docker-smoke.ts");
    const binary = join(mkdtempSync(join(tmpdir(), "rt-smoke-")), "smoke");
    execFileSync(join(root, "node_modules/.bin/bun"), ["build", "--compile", script, "--outfile", binary], {
      stdio: "ignore",
    });
    const runs = [
      spawnSync(
        join(root, "node_modules/.bin/deno"),
        ["run", "-A", script, services.dockerHost, services.busybox, services.pause],
        {
          encoding: "utf8",
          timeout: 30_000,
        },
      ),
      spawnSync(binary, [services.dockerHost, services.busybox, services.pause], { encoding: "utf8", timeout: 30_000 }),
    ];
    rmSync(binary, { force: true });
    for (const result of runs) {
      expect(result.stderr).not.toContain("error");
      const report = JSON.parse(result.stdout) as { exec: unknown; logs: string; actions: string[] };
      expect(report.exec).toEqual({ exitCode: 3, stdout: "out\n", stderr: "err\n" });
      expect(report.logs).toBe("one\ntwo\n");
      expect(report.actions).toEqual(expect.arrayContaining(["ContainerChanged", "ContainerStarted", "ContainerDied"]));
    }
  }, 30_000);
});

describe("Docker runtime without a daemon", () => {
  const dir = mkdtempSync(join(tmpdir(), "rt-docker-"));
  const servers: Server[] = [];
  afterAll(() => {
    for (const server of servers) server.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const listen = (server: Server, name: string) =>
    new Promise<string>((resolve) => {
      servers.push(server);
      server.listen(join(dir, name), () => resolve(`unix://${join(dir, name)}`));
    });

  test("an absent socket or a closed port is RuntimeUnavailable at once", async () => {
    for (const endpoint of [`unix://${join(dir, "absent.sock")}`, "tcp://127.0.0.1:1"]) {
      const started = Date.now();
      await expect(createDockerRuntime({ endpoint }).version()).rejects.toMatchObject({ code: "RuntimeUnavailable" });
      expect(Date.now() - started).toBeLessThan(1000);
    }
  });

  test("a daemon that never answers is RuntimeUnavailable after the request timeout", async () => {
    const endpoint = await listen(
      createNetServer(() => {}),
      "silent.sock",
    );
    const started = Date.now();
    await expect(createDockerRuntime({ endpoint, requestTimeoutMs: 300 }).listContainers()).rejects.toMatchObject({
      code: "RuntimeUnavailable",
      message: expect.stringContaining("did not answer within 300 ms"),
    });
    expect(Date.now() - started).toBeLessThan(2000);
  });

  test("reads a container's stats as one sample the Engine has at hand, without waiting for a second", async () => {
    const asked: string[] = [];
    const server = createHttpServer((req, res) => {
      asked.push(req.url!);
      res.writeHead(200, { "content-type": "application/json" });
      res.end(
        JSON.stringify({
          read: "2026-11-23T13:00:00Z",
          cpu_stats: { cpu_usage: { total_usage: 5 }, system_cpu_usage: 9 },
          memory_stats: { usage: 100, limit: 1000, stats: { total_inactive_file: 30 } },
          networks: { eth0: { rx_bytes: 1, tx_bytes: 2 }, eth1: { rx_bytes: 3, tx_bytes: 4 } },
          pids_stats: { current: 2 },
        }),
      );
    });
    const endpoint = await listen(server as unknown as Server, "stats.sock");
    expect(await createDockerRuntime({ endpoint }).stats("abc")).toEqual({
      time: "2026-11-23T13:00:00Z",
      cpuUsageNanoseconds: 5,
      systemCpuNanoseconds: 9,
      memoryUsageBytes: 100,
      memoryWorkingSetBytes: 70,
      memoryLimitBytes: 1000,
      networkRxBytes: 4,
      networkTxBytes: 6,
      pids: 2,
    });
    expect(asked).toEqual(["/containers/abc/stats?stream=false&one-shot=true"]);
  });

  test("reads the machine's facts from the Engine's /info once however often asked, and asks again after a failure", async () => {
    const asked: string[] = [];
    const server = createHttpServer((req, res) => {
      asked.push(req.url!);
      if (asked.length === 1) return void res.writeHead(500).end(JSON.stringify({ message: "busy" }));
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ OperatingSystem: "Debian", NCPU: 2, MemTotal: 1024, CgroupDriver: "cgroupfs" }));
    });
    const runtime = createDockerRuntime({ endpoint: await listen(server as unknown as Server, "info.sock") });
    await expect(runtime.machineInfo()).rejects.toMatchObject({ code: "RuntimeError" });
    const answers = await Promise.all([runtime.machineInfo(), runtime.machineInfo()]);
    expect(await runtime.machineInfo()).toMatchObject({ cpus: 2, memoryBytes: 1024, cgroupDriver: "cgroupfs" });
    expect(answers[0]).toEqual(answers[1]);
    expect(asked).toEqual(["/info", "/info"]);
  });

  test("calls reuse kept-alive connections to the Engine, a burst leaves at most the bound idle, and one the Engine closed is replaced", async () => {
    let connections = 0;
    const server = createHttpServer((_req, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ read: "2026-11-23T13:00:00Z" }));
    });
    server.on("connection", () => connections++);
    const endpoint = await listen(server as unknown as Server, "keepalive.sock");
    const runtime = createDockerRuntime({ endpoint });
    for (let i = 0; i < 5; i++) await runtime.stats("abc");
    expect(connections).toBe(1);
    server.closeIdleConnections(); // as a restarted Engine would
    await Bun.sleep(50);
    expect((await runtime.stats("abc")).time).toBe("2026-11-23T13:00:00Z");
    expect(connections).toBe(2);
    // A burst of calls in parallel leaves no more than the bound of idle connections open.
    let open = 0;
    server.on("connection", (socket) => {
      open++;
      socket.on("close", () => open--);
    });
    await Promise.all(Array.from({ length: 30 }, () => runtime.stats("abc")));
    expect(connections).toBeGreaterThan(KEPT_ENGINE_CONNECTIONS);
    for (let i = 0; i < 100 && open > KEPT_ENGINE_CONNECTIONS; i++) await Bun.sleep(10);
    expect(open).toBeLessThanOrEqual(KEPT_ENGINE_CONNECTIONS);
  });

  test("image filesystem reads at once share one disk usage count (the Engine refuses a second one while it counts)", async () => {
    let counts = 0;
    let counting = false;
    const server = createHttpServer((req, res) => {
      res.writeHead(req.url === "/system/df" && counting ? 500 : 200, { "content-type": "application/json" });
      if (req.url === "/info") return void res.end(JSON.stringify({ DockerRootDir: "/var/lib/docker" }));
      if (counting) return void res.end(JSON.stringify({ message: "a disk usage operation is already running" }));
      counts++;
      counting = true;
      setTimeout(() => {
        counting = false;
        res.end(JSON.stringify({ LayersSize: 42 }));
      }, 50);
    });
    const endpoint = await listen(server as unknown as Server, "df.sock");
    const runtime = createDockerRuntime({ endpoint });
    const answers = await Promise.all([runtime.imageFsInfo(), runtime.imageFsInfo(), runtime.imageFsInfo()]);
    expect(new Set(answers.map((a) => `${a.mountpoint} ${a.usedBytes}`))).toEqual(new Set(["/var/lib/docker 42"]));
    expect(counts).toBe(1);
    await runtime.imageFsInfo();
    expect(counts).toBe(2);
  });

  test("the event stream throws RuntimeUnavailable when the daemon goes away", async () => {
    const server = createHttpServer((_req, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(
        `${JSON.stringify({ Type: "container", Action: "die", Actor: { ID: "abc", Attributes: { [LABEL.podUid]: "u" } }, timeNano: 1_700_000_000_000_000_000 })}\n`,
      );
    });
    const endpoint = await listen(server as unknown as Server, "events.sock");
    const seen: string[] = [];
    const consume = async () => {
      for await (const event of createDockerRuntime({ endpoint }).events(new AbortController().signal))
        seen.push(`${event.type} ${event.containerId} ${event.time}`);
    };
    await expect(consume()).rejects.toMatchObject({ code: "RuntimeUnavailable" });
    expect(seen).toEqual(["ContainerDied abc 1700000000000"]);
  });
});

describe("Docker endpoint", () => {
  test("is the flag, else $DOCKER_HOST, else the default socket", () => {
    expect(resolveDockerEndpoint("tcp://127.0.0.1:2375", { DOCKER_HOST: "unix:///x" })).toBe("tcp://127.0.0.1:2375");
    expect(resolveDockerEndpoint("", { DOCKER_HOST: "unix:///x" })).toBe("unix:///x");
    expect(resolveDockerEndpoint("", {})).toBe("unix:///var/run/docker.sock");
  });

  test("ssh:// or any scheme but unix, tcp, http and https is refused, naming where it came from and what is taken", () => {
    for (const endpoint of ["ssh://core@node-1", "npipe:////./pipe/docker_engine", "127.0.0.1:2375"])
      expect(() => createDockerRuntime({ endpoint })).toThrow(
        `Docker endpoint "${endpoint}" (--docker_endpoint, else $DOCKER_HOST): unsupported; give unix:///path/to/docker.sock, tcp://host:port, http://host:port or https://host:port`,
      );
    for (const endpoint of ["unix:///run/docker.sock", "/run/docker.sock", "tcp://[::1]:2375", "https://127.0.0.1"])
      expect(() => createDockerRuntime({ endpoint })).not.toThrow();
  });
});
