// The usual mistakes of an operator's first hour, each against the compiled binary: a mistyped flag, a port
// in use at each listener, a runtime socket that is missing or forbidden (the kubelet run as an unprivileged
// user). Each must end in its exit code and one line that names the fix; nothing else starts first.
import { afterAll, beforeAll, describe, expect } from "bun:test";
import { chmodSync, mkdirSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { join } from "node:path";
import { describeWithServices, KUBELET_BINARY } from "../../lib/testing/services.ts";
import { freePort, KubeletProcess, removeDir, runBinary, tempDir, test, waitFor } from "./harness.ts";

/** The JSON log lines of a run, as objects. */
const logLines = (output: string) =>
  output
    .split("\n")
    .filter((line) => line.startsWith("{"))
    .map((line) => JSON.parse(line) as { level: string; msg: string; code?: string });

describe("an unknown flag", () => {
  for (const [typed, line] of [
    ["--sync-frequncy", "kubelet: unknown flag --sync-frequncy: did you mean --sync-frequency?"],
    ["--sync_frequncy", "kubelet: unknown flag --sync_frequncy: did you mean --sync_frequency?"],
    ["--manifest-ulr", "kubelet: unknown flag --manifest-ulr: did you mean --manifest-url?"],
  ] as const)
    test(`${typed} exits 2 with "${line}"`, () => {
      const result = runBinary(["run", typed, "1m"]);
      expect({ code: result.code, first: result.stderr.split("\n")[0] }).toEqual({ code: 2, first: line });
    });
});

describeWithServices("an operator's mistakes", (services) => {
  const dir = tempDir("mistakes");
  const manifests = join(dir, "manifests");
  let holder: Server;
  let held: number;
  beforeAll(async () => {
    mkdirSync(manifests);
    holder = createServer();
    held = await new Promise<number>((resolve) =>
      holder.listen(0, "127.0.0.1", () => resolve((holder.address() as { port: number }).port)),
    );
  });
  afterAll(() => {
    holder.close();
    removeDir(dir);
  });
  const runFlags = () => [
    "run",
    "-c",
    manifests,
    "--docker_endpoint",
    services.dockerHost,
    "--root_dir",
    join(dir, "root"),
    "--log_format",
    "json",
    "--cgroups_per_qos=false",
    "--enforce_node_allocatable=none",
  ];

  for (const flag of ["--port", "--read_only_port", "--healthz_port"])
    test(`a port in use at ${flag} stops the kubelet with exit 1 and one line naming ${flag}, before the runtime is contacted`, async () => {
      const others = { "--port": await freePort(), "--healthz_port": 0, "--read_only_port": 0 };
      const ports = { ...others, [flag]: held };
      const result = runBinary([...runFlags(), ...Object.entries(ports).flatMap(([f, p]) => [f, String(p)])], {
        timeoutMs: 30_000,
      });
      const lines = logLines(result.stderr);
      expect(result.code).toBe(1);
      expect(lines.filter((l) => l.level !== "info")).toEqual([
        {
          level: "error",
          msg: `cannot listen on 127.0.0.1:${held} (${flag}): the address is in use: stop what listens there (ss -ltnp 'sport = :${held}') or give ${flag} another port`,
          code: "ListenerUnavailable",
          time: expect.any(String),
          priority: 3,
        } as never,
      ]);
      // Nothing started: the version, the effective settings and who may ask what are all it said before.
      expect(lines.filter((l) => l.level === "info").map((l) => l.msg.split(" ")[0])).toEqual([
        "kubelet",
        "effective",
        "anonymous",
      ]);
    });

  test("a missing Docker socket: runonce exits 1 with one line naming the fix", () => {
    const socket = join(dir, "no-docker.sock");
    const result = runBinary(["runonce", ...runFlags().slice(1), "--docker_endpoint", `unix://${socket}`]);
    expect(result.code).toBe(1);
    expect(result.stderr.split("\n").filter((l) => l.startsWith("kubelet:"))).toEqual([
      `kubelet: cannot read the Docker version: the Docker Engine is unreachable: connect ENOENT ${socket}: no socket there: start docker (systemctl start docker) or give --docker_endpoint the socket it listens on`,
    ]);
  });

  test("a missing containerd socket: runonce exits 1 with one line naming the flag, and no empty 'Resolution note'", () => {
    const socket = join(dir, "no-containerd.sock");
    const result = runBinary([
      "runonce",
      ...runFlags().slice(1),
      "--container_runtime",
      "remote",
      "--container_runtime_endpoint",
      `unix://${socket}`,
    ]);
    expect(result.code).toBe(1);
    expect(result.stderr.split("\n").filter((l) => l.startsWith("kubelet:"))).toEqual([
      `kubelet: cannot Version: the container runtime at unix://${socket} did not answer: connect ENOENT ${socket}: no socket there: start containerd (systemctl start containerd) or give --container_runtime_endpoint the socket it listens on`,
    ]);
  });

  test("a Docker socket this user may not open: runonce as an unprivileged user exits 1 naming root and the docker group", async () => {
    // A socket nobody but root may open; the kubelet runs as nobody (uid 65534) when the test runs as root.
    const socket = join(dir, "forbidden.sock");
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(socket, resolve));
    chmodSync(socket, 0o600);
    const root = join(dir, "nobody-root");
    mkdirSync(root);
    chmodSync(root, 0o777);
    chmodSync(dir, 0o755);
    const asNobody = process.getuid?.() === 0 ? ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] : [];
    try {
      const result = runBinary(
        [
          "runonce",
          "-c",
          manifests,
          "--docker_endpoint",
          `unix://${socket}`,
          "--root_dir",
          root,
          "--log_format",
          "json",
          "--cgroups_per_qos=false",
          "--enforce_node_allocatable=none",
        ],
        { command: [...asNobody, KUBELET_BINARY] },
      );
      expect(result.code).toBe(1);
      expect(result.stderr.split("\n").filter((l) => l.startsWith("kubelet:"))).toEqual([
        `kubelet: cannot read the Docker version: the Docker Engine is unreachable: connect EACCES ${socket}: permission denied: run the kubelet as root or as a member of the docker group, or give --docker_endpoint a socket this user may open`,
      ]);
    } finally {
      server.close();
    }
  });

  test("a missing Docker socket under run: one line at once and one 30 s later naming the waiting pods, nothing from each component", async () => {
    const socket = join(dir, "gone.sock");
    const flags = runFlags();
    flags[2] = "testdata/pods";
    const kubelet = new KubeletProcess([
      ...flags,
      "--docker_endpoint",
      `unix://${socket}`,
      "--port",
      String(await freePort()),
      "--healthz_port",
      "0",
      "--sync_frequency",
      "1s",
    ]);
    const cause = `the Docker Engine is unreachable: connect ENOENT ${socket}: no socket there: start docker (systemctl start docker) or give --docker_endpoint the socket it listens on`;
    const warnings = () =>
      logLines(kubelet.output)
        .filter((l) => l.level === "warn" && l.msg.includes(socket))
        .map((l) => l.msg);
    await waitFor("the outage said a second time", () => warnings().length >= 2, 50_000);
    await kubelet.stop();
    expect(warnings()).toEqual([
      `container runtime unavailable: ${cause} (said again every 30s while it lasts)`,
      `container runtime unavailable for 30s: ${cause}; pods waiting: default/legacy-sleeper, default/web, default/worker (said again every 30s while it lasts)`,
    ]);
  }, 90_000);
});
