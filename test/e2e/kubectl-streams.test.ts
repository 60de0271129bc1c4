// The pod subresources that stream, driven by the machine's real kubectl over the TLS port with the admin token, on
// each runtime: logs (-f, --tail, --previous, -c), exec (stdin piped, and -it under a pty), cp, attach and
// port-forward to a host-network pod and to a network-none pod, bytes checked at the far end.
import { afterAll, beforeAll, expect } from "bun:test";
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { join } from "node:path";
import { KUBELET_BINARY } from "../../lib/testing/services.ts";
import { apiFront, kubeletForKubectl } from "./api-shim.ts";
import {
  describeOnRuntimes,
  freePort,
  Kubelet,
  removeDir,
  runBinary,
  tempDir,
  test,
  waitFor,
  writePod,
} from "./harness.ts";

const KUBECTL = "/usr/bin/kubectl";
const POD = "e2e-kstreams";
const HOST_POD = "e2e-kstreams-host";
/** The network-none pod's echo server (busybox nc, one cat per connection). */
const ECHO_PORT = 18080;

/** Runs `command` to its end, asynchronously: the API front answering kubectl runs in this process. */
function run(command: string, args: string[], env: Record<string, string>, input?: string) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    const child = spawn(command, args, { env: { ...process.env, ...env }, stdio: ["pipe", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    const timer = setTimeout(() => child.kill("SIGKILL"), 60_000);
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    child.stdin.end(input ?? "");
  });
}

/** Runs kubectl to its end. */
const kubectl = (env: Record<string, string>, args: string[], input?: string) => run(KUBECTL, args, env, input);

/** Starts a long-running kubectl; `output()` is what it printed so far. */
function kubectlLive(env: Record<string, string>, args: string[]) {
  const child: ChildProcess = spawn(KUBECTL, args, {
    env: { ...process.env, ...env },
    stdio: ["pipe", "pipe", "pipe"],
  });
  let output = "";
  child.stdout!.on("data", (d) => (output += d));
  child.stderr!.on("data", (d) => (output += d));
  return { child, output: () => output, stop: () => child.kill("SIGINT") };
}

/**
 * Sends `text` on a TCP connection to 127.0.0.1:`port` and returns what comes back, once as many bytes came back or
 * the far end closed. The connection is not half-closed: containerd's forward (v4 WebSocket) cannot pass that on.
 */
function exchange(port: number, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: "127.0.0.1", port });
    let reply = "";
    socket.on("data", (d) => {
      reply += d;
      if (reply.length >= text.length) socket.destroy();
    });
    socket.on("close", () => resolve(reply));
    socket.on("error", reject);
    socket.on("connect", () => socket.write(text));
  });
}

describeOnRuntimes("kubectl logs, exec, cp, attach and port-forward", (services, rt) => {
  const dir = tempDir("kstreams");
  const manifests = join(dir, "manifests");
  const rootDir = join(dir, "root");
  const hostPort = 0;
  let webPort = hostPort;
  let kubelet: Kubelet;
  let front: Awaited<ReturnType<typeof apiFront>>;
  const env: Record<string, string> = {};
  /** The pod's status as the kubelet's /pods reports it (over TLS). */
  const podStatus = async (name: string) => {
    const response = await fetch(`https://127.0.0.1:${kubelet.port}/pods/default/${name}`, {
      headers: kubelet.adminHeaders(),
      tls: { rejectUnauthorized: false },
    } as RequestInit);
    return (
      (await response.json()) as { status: { containerStatuses?: Array<{ name: string; restartCount: number }> } }
    ).status;
  };

  beforeAll(async () => {
    spawnSync("mkdir", ["-p", manifests, rootDir, join(dir, "home")]);
    console.log(`kubectl under test: ${(await kubectl({}, ["version", "--client"])).stdout.split("\n")[0]}`);
    webPort = await freePort();
    const container = (name: string, command: string[]) => ({ name, image: services.busybox, command });
    writePod(manifests, POD, {
      terminationGracePeriodSeconds: 1,
      containers: [
        container("main", [
          "sh",
          "-c",
          "busybox ln -s /bin/busybox /bin/tar; i=0; while true; do echo line $i; i=$((i+1)); sleep 1; done",
        ]),
        container("echo", ["nc", "-ll", "-p", String(ECHO_PORT), "-e", "cat"]),
        container("crasher", ["sh", "-c", "echo run at $(date +%s); sleep 1; exit 1"]),
      ],
    });
    writePod(manifests, HOST_POD, {
      hostNetwork: true,
      terminationGracePeriodSeconds: 1,
      containers: [
        container("web", [
          "sh",
          "-c",
          `mkdir -p /www && echo hello-host > /www/index.html && exec httpd -f -p 127.0.0.1:${webPort} -h /www`,
        ]),
      ],
    });
    const started = await kubeletForKubectl(dir, rt.runFlags(manifests, rootDir), "kstreams");
    ({ kubelet, front } = started);
    Object.assign(env, started.env);
    await waitFor(
      "the pods' containers running",
      async () =>
        Boolean(
          (await rt.running(POD, "main")) && (await rt.running(POD, "echo")) && (await rt.running(HOST_POD, "web")),
        ),
      60_000,
    );
  }, 120_000);
  afterAll(async () => {
    front?.close();
    await kubelet?.stop("SIGKILL");
    await rt.removePods(POD, HOST_POD);
    removeDir(dir);
  });

  test("kubectl logs --tail 1 -c main prints the last line only", async () => {
    await waitFor("two lines logged", async () =>
      (await kubectl(env, ["logs", POD, "-c", "main"])).stdout.includes("line 1"),
    );
    const { code, stdout, stderr } = await kubectl(env, ["logs", POD, "-c", "main", "--tail", "1"]);
    expect({ code, stderr }).toEqual({ code: 0, stderr: "" });
    expect(stdout).toMatch(/^line \d+\n$/);
  }, 60_000);

  test("kubectl logs -f follows new lines as the container writes them", async () => {
    const follow = kubectlLive(env, ["logs", "-f", POD, "-c", "main", "--tail", "1"]);
    try {
      const first = await waitFor("a first line", () => /line (\d+)/.exec(follow.output())?.[1]);
      await waitFor("a later line", () => follow.output().includes(`line ${Number(first) + 2}`), 10_000);
    } finally {
      follow.stop();
    }
  }, 30_000);

  test("kubectl logs --previous prints the log of the container's last run", async () => {
    await waitFor(
      "the crasher restarted",
      async () => ((await podStatus(POD)).containerStatuses ?? []).find((s) => s.name === "crasher")?.restartCount,
      30_000,
    );
    const previous = await kubectl(env, ["logs", POD, "-c", "crasher", "--previous"]);
    expect(previous.stderr).toBe("");
    expect(previous.stdout).toMatch(/^run at \d+\n$/);
  }, 60_000);

  test("the log of a pod of several containers without a container named says which to choose, as the API server does", async () => {
    const response = await fetch(`https://127.0.0.1:${kubelet.port}/api/v1/namespaces/default/pods/${POD}/log`, {
      headers: kubelet.adminHeaders(),
      tls: { rejectUnauthorized: false },
    } as RequestInit);
    expect(response.status).toBe(400);
    expect(((await response.json()) as { message: string }).message).toBe(
      `a container name must be specified for pod ${POD}, choose one of: [main echo crasher]`,
    );
  });

  test("kubectl exec -i passes piped stdin, and returns the command's exit code", async () => {
    const echoed = await kubectl(
      env,
      ["exec", "-i", POD, "-c", "main", "--", "sh", "-c", "read x; echo got $x"],
      "hello\n",
    );
    expect({ code: echoed.code, stdout: echoed.stdout }).toEqual({ code: 0, stdout: "got hello\n" });
    const failed = await kubectl(env, ["exec", POD, "-c", "main", "--", "sh", "-c", "echo oops >&2; exit 3"]);
    expect(failed.code).toBe(3);
    expect(failed.stderr).toContain("oops");
    expect(failed.stderr).toContain("command terminated with exit code 3");
  }, 60_000);

  test("kubectl exec -it runs the command on a terminal", async () => {
    const command = `${KUBECTL} exec -it ${POD} -c main -- sh -c 'tty; echo done'`;
    const result = await run("script", ["-qec", command, "/dev/null"], env);
    expect(result.stdout).toMatch(/\/dev\/pts\/\d+\r?\n/);
    expect(result.stdout).toContain("done");
  }, 60_000);

  test("kubectl cp copies a file out of the container (exec with tar, output only)", async () => {
    await kubectl(env, ["exec", POD, "-c", "main", "--", "sh", "-c", "echo made in the pod > /tmp/out.txt"]);
    const back = join(dir, "out.txt");
    const out = await kubectl(env, ["cp", `${POD}:/tmp/out.txt`, back, "-c", "main"]);
    expect({ code: out.code, stderr: out.stderr }).toEqual({ code: 0, stderr: "" });
    expect(readFileSync(back, "utf8")).toBe("made in the pod\n");
  }, 60_000);

  // Copying in needs tar to read stdin to its end, so the kubelet must close the process's stdin alone: Docker's
  // exec takes the half-close, containerd's streaming server a FIN on the SPDY stdin stream.
  test("kubectl cp copies a directory into the container, every file intact (tar reads stdin to its end)", async () => {
    const local = join(dir, "to-copy");
    mkdirSync(join(local, "sub"), { recursive: true });
    const files: Record<string, Buffer> = {
      "small.txt": Buffer.from("copied through exec and tar\n"),
      "sub/big.bin": randomBytes(300 * 1024),
    };
    for (const [name, content] of Object.entries(files)) writeFileSync(join(local, name), content);
    const into = await kubectl(env, ["cp", local, `${POD}:/tmp/x`, "-c", "main"]);
    expect({ code: into.code, stderr: into.stderr }).toEqual({ code: 0, stderr: "" });
    const paths = ["/tmp/x/small.txt", "/tmp/x/sub/big.bin"];
    const sums = await kubectl(env, ["exec", POD, "-c", "main", "--", "busybox", "md5sum", ...paths]);
    const md5 = (content: Buffer) => createHash("md5").update(content).digest("hex");
    expect(sums.stdout).toBe(
      `${md5(files["small.txt"]!)}  /tmp/x/small.txt\n${md5(files["sub/big.bin"]!)}  /tmp/x/sub/big.bin\n`,
    );
  }, 60_000);

  test("kubectl exec -i of cat ends when piped stdin ends, with every byte back and exit code 0", async () => {
    const input = `${"0123456789abcdef".repeat(8192)}end\n`;
    const echoed = await kubectl(env, ["exec", "-i", POD, "-c", "main", "--", "cat"], input);
    expect({ code: echoed.code, length: echoed.stdout.length, same: echoed.stdout === input }).toEqual({
      code: 0,
      length: input.length,
      same: true,
    });
  }, 60_000);

  test("kubectl attach shows what the container's main process writes", async () => {
    const attach = kubectlLive(env, ["attach", POD, "-c", "main"]);
    try {
      await waitFor("a line through attach", () => /line \d+/.test(attach.output()), 15_000);
    } finally {
      attach.stop();
    }
  }, 30_000);

  test("kubectl port-forward reaches a host-network pod's port", async () => {
    const local = await freePort();
    const forward = kubectlLive(env, ["port-forward", `pod/${HOST_POD}`, `${local}:${webPort}`]);
    try {
      await waitFor("the forward listening", () => forward.output().includes("Forwarding from"), 15_000);
      const response = await fetch(`http://127.0.0.1:${local}/`);
      expect(await response.text()).toBe("hello-host\n");
      // A second connection over the same forward.
      expect(await (await fetch(`http://127.0.0.1:${local}/index.html`)).text()).toBe("hello-host\n");
    } finally {
      forward.stop();
    }
  }, 30_000);

  test("kubectl port-forward reaches a port inside a network-none pod, bytes both ways", async () => {
    const local = await freePort();
    const forward = kubectlLive(env, ["port-forward", POD, `${local}:${ECHO_PORT}`]);
    try {
      await waitFor("the forward listening", () => forward.output().includes("Forwarding from"), 15_000);
      const payload = `${"x".repeat(100_000)}\nend\n`;
      expect(await exchange(local, payload)).toBe(payload);
    } finally {
      forward.stop();
    }
  }, 30_000);

  /**
   * The flags of `kubelet logs`, `exec` and `port-forward`: the configuration file they read the local kubelet's
   * address and root dir from, and the CA that signs its serving certificate (verified before the token is sent).
   */
  const cliFlags = () => {
    const file = join(dir, "cli-config.yaml");
    const crt = join(dir, "kstreams-kubelet");
    writeFileSync(
      file,
      `port: ${kubelet.port}\nroot_dir: ${rootDir}\ntls_cert_file: ${crt}.crt\ntls_private_key_file: ${crt}.key\n`,
    );
    return ["--config-file", file, "--certificate-authority", join(dir, "kstreams.crt")];
  };

  test("kubelet logs, the node's own client, prints the log as kubectl does and kubectl's error when refused", () => {
    const flags = cliFlags();
    const tail = runBinary(["logs", POD, "-c", "main", "--tail", "1", ...flags]);
    expect({ code: tail.code, stderr: tail.stderr }).toEqual({ code: 0, stderr: "" });
    expect(tail.stdout).toMatch(/^line \d+\n$/);
    const refused = runBinary(["logs", POD, ...flags]);
    expect({ code: refused.code, stderr: refused.stderr }).toEqual({
      code: 1,
      stderr: `Error from server (BadRequest): a container name must be specified for pod ${POD}, choose one of: [main echo crasher]\n`,
    });
  });

  test("kubelet exec, the node's own client, passes stdin, prints both streams and exits with the command's code", () => {
    const flags = cliFlags();
    const ran = runBinary(
      ["exec", "-i", POD, "-c", "main", ...flags, "--", "sh", "-c", "read x; echo got $x; echo oops >&2; exit 3"],
      { input: "piped\n" },
    );
    expect(ran).toEqual({ code: 3, stdout: "got piped\n", stderr: "oops\n" });
    const missing = runBinary(["exec", "absent", ...flags, "--", "true"]);
    expect({ code: missing.code, stderr: missing.stderr }).toEqual({
      code: 1,
      stderr: 'Error from server (NotFound): pods "absent" not found\n',
    });
  });

  test("kubelet port-forward, the node's own client, carries bytes to a network-none pod's port", async () => {
    const local = await freePort();
    const forward = spawn(KUBELET_BINARY, ["port-forward", POD, `${local}:${ECHO_PORT}`, ...cliFlags()], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    forward.stdout.on("data", (d) => (output += d));
    forward.stderr.on("data", (d) => (output += d));
    try {
      await waitFor(
        "the forward listening",
        () => output.includes(`Forwarding from 127.0.0.1:${local} -> ${ECHO_PORT}`),
        15_000,
      );
      expect(await exchange(local, "through the kubelet's own client\n")).toBe("through the kubelet's own client\n");
    } finally {
      forward.kill("SIGINT");
    }
    const code = await new Promise((resolve) => forward.on("exit", resolve));
    expect(code).toBe(0);
  }, 30_000);

  /** Runs a script of the official Python client (python3-kubernetes) against the API, as the admin. */
  const python = (script: string) =>
    run(
      "/usr/bin/python3",
      [
        "-c",
        `from kubernetes import client
from kubernetes.stream import stream, portforward
c = client.Configuration()
c.host = "https://127.0.0.1:${front.port}"
c.api_key = {"authorization": "Bearer ${kubelet.adminToken()}"}
c.ssl_ca_cert = "${join(dir, "kstreams.crt")}"
api = client.CoreV1Api(client.ApiClient(c))
${script}`,
      ],
      {},
    );

  test("the Python client's stream() runs a command through connect_get_namespaced_pod_exec", async () => {
    const result = await python(
      `print(stream(api.connect_get_namespaced_pod_exec, "${POD}", "default", container="main", command=["sh", "-c", "echo from python; echo to stderr >&2"], stderr=True, stdin=False, stdout=True, tty=False), end="")`,
    );
    expect(result.stderr).toBe("");
    expect(result.stdout).toContain("from python\n");
  }, 60_000);

  test("the Python client's portforward() carries bytes both ways to a network-none pod's port", async () => {
    const result = await python(
      `pf = portforward(api.connect_get_namespaced_pod_portforward, "${POD}", "default", ports="${ECHO_PORT}")
sock = pf.socket(${ECHO_PORT})
sock.sendall(b"through python\\n")
got = b""
while len(got) < 15:
    got += sock.recv(1024)
print(got.decode(), end="")
sock.close()`,
    );
    expect(result.stderr).toBe("");
    expect(result.stdout).toBe("through python\n");
  }, 60_000);

  test("kubectl port-forward to a port nothing listens on reports the runtime's error", async () => {
    const local = await freePort();
    const forward = kubectlLive(env, ["port-forward", POD, `${local}:18081`]);
    try {
      await waitFor("the forward listening", () => forward.output().includes("Forwarding from"), 15_000);
      await exchange(local, "hello\n").catch(() => "");
      await waitFor("the error", () => forward.output().includes("error forwarding port 18081"), 15_000);
    } finally {
      forward.stop();
    }
  }, 30_000);
});
