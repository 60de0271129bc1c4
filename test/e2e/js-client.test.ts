// The official JavaScript client (@kubernetes/client-node) against the compiled kubelet's API over TLS with the
// admin credential `kubelet kubeconfig` writes, on Docker and containerd: CoreV1Api reads, an informer through a
// pod's whole life and a kubelet restart (410, relist), watch bookmarks, Log (follow), Exec, PortForward, Metrics.
import { afterAll, beforeAll, expect } from "bun:test";
import { createServer, connect, type AddressInfo } from "node:net";
import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { PassThrough, Writable } from "node:stream";
import { Exec, KubeConfig, PortForward, type V1Status } from "@kubernetes/client-node";
import { createTestCa } from "../../lib/testing/certificates.ts";
import { describeOnRuntimes, freePort, Kubelet, runBinary, staticPodNode, test, waitFor } from "./harness.ts";

const WEB = "jsc-web";
const PUSHED = "jsc-pushed"; // js-client-driver.ts's informer scenario creates and deletes it
const ECHO_PORT = 17_081;

/** A Writable gathering what is written to it. */
function collector() {
  let text = "";
  const stream = new Writable({
    write(chunk, _encoding, done) {
      text += chunk.toString();
      done();
    },
  });
  return { stream, text: () => text };
}

describeOnRuntimes("the JavaScript client against the node's API", (services, rt) => {
  const node = staticPodNode("js-client", services, rt, [WEB, PUSHED]);
  const kubeconfig = join(node.rootDir, "js-client.kubeconfig");
  const caPem = join(node.rootDir, "js-client-ca.crt");
  let kubelet: Kubelet;
  let args: string[];
  let caFile: string;
  let tls: string[];
  let kc: KubeConfig;
  const kubeletCli = (...cli: string[]) =>
    runBinary([...cli, "--root_dir", node.rootDir, "--port", String(kubelet.port), ...tls, "--config_file="]);

  /**
   * Runs js-client-driver.ts's `scenario` in a process trusting the kubeconfig's CA and returns its JSON lines;
   * `onLine` sees each as it comes (the relist scenario restarts the kubelet on its first).
   */
  const drive = async (scenario: string, pod = "", image = "", onLine?: (line: any) => Promise<void>) => {
    const child = spawn(
      process.execPath,
      [join(import.meta.dir, "js-client-driver.ts"), kubeconfig, scenario, pod, image],
      { env: { ...process.env, NODE_EXTRA_CA_CERTS: caPem } },
    );
    let stderr = "";
    child.stderr.on("data", (d) => (stderr += d));
    const lines: any[] = [];
    let pending = "";
    const handled: Promise<void>[] = [];
    child.stdout.on("data", (d) => {
      const parts = (pending + d).split("\n");
      pending = parts.pop()!;
      for (const part of parts) {
        const line = JSON.parse(part);
        lines.push(line);
        if (onLine) handled.push(onLine(line));
      }
    });
    const code = await new Promise<number | null>((resolve) => child.on("exit", resolve));
    await Promise.all(handled);
    if (code !== 0) throw new Error(`js-client-driver.ts ${scenario} exited ${code}: ${stderr}`);
    return lines;
  };

  /** Starts the kubelet (again, for a restart) and waits for its API over TLS. */
  const start = async () => {
    kubelet = new Kubelet(args, kubelet?.port ?? (await freePort()));
    await kubelet.waitFor(
      "the API over TLS",
      () => {
        const got = kubeletCli("get", "pods", "--certificate-authority", caFile);
        return got.code === 0 || console.log(got.stderr);
      },
      30_000,
    );
  };

  beforeAll(async () => {
    const ca = createTestCa(node.rootDir, "serving");
    const serving = ca.server("kubelet", { ips: ["127.0.0.1"] });
    tls = ["--tls_cert_file", serving.certFile, "--tls_private_key_file", serving.keyFile];
    caFile = ca.caFile;
    node.write(WEB, {
      terminationGracePeriodSeconds: 1,
      containers: [
        {
          name: "main",
          image: services.busybox,
          command: ["sh", "-c", "i=0; while true; do echo line $i; i=$((i+1)); sleep 1; done"],
        },
        { name: "echo", image: services.busybox, command: ["nc", "-ll", "-p", String(ECHO_PORT), "-e", "cat"] },
      ],
    });
    // An operator's certificate naming 127.0.0.1: the self-signed one names the host, so the kubeconfig would carry
    // tls-server-name, which Bun's fetch (the client's HTTP calls run on it here) does not apply.
    args = [...rt.runFlags(node.manifests, node.rootDir), ...tls];
    await start();
    expect(kubeletCli("kubeconfig", "--write", kubeconfig, "--certificate-authority", caFile).code).toBe(0);
    kc = new KubeConfig();
    kc.loadFromFile(kubeconfig);
    // The WebSocket calls (Exec, PortForward) run here with the kubeconfig's CA; the HTTP ones run in the driver.
    writeFileSync(caPem, Buffer.from(kc.getCurrentCluster()!.caData!, "base64"));
    await waitFor(
      "the pod's containers running",
      async () => Boolean((await rt.running(WEB, "main")) && (await rt.running(WEB, "echo"))),
      60_000,
    );
  }, 120_000);
  afterAll(() => kubelet?.stop("SIGKILL"));

  test("KubeConfig.loadFromFile reads kubelet kubeconfig's file; CoreV1Api lists pods in every namespace and reads one", async () => {
    expect(kc.getCurrentCluster()?.server).toBe(`https://127.0.0.1:${kubelet.port}`);
    const [read] = await drive("read", WEB);
    expect(read.names).toContain(`default/${WEB}`);
    expect(Number(read.resourceVersion)).toBeGreaterThan(0);
    expect(read.containers).toEqual(["main", "echo"]);
    expect(read.source).toBe("file");
    expect(read.kubeSystem).toBe(0);
    expect(read.missing).toMatchObject({
      code: 404,
      body: { kind: "Status", reason: "NotFound", message: 'pods "nope" not found' },
    });
  });

  test("an informer sees a pod the client creates added, patched and deleted, each with a newer resourceVersion", async () => {
    const [result] = await drive("informer", WEB, services.busybox);
    expect(result.listed).toContain(WEB);
    const seen = result.seen as Array<[string, string, string]>;
    expect(seen[0]!.slice(0, 2)).toEqual(["add", "one"]);
    expect(seen).toContainEqual(["update", "two", expect.any(String)]);
    expect(seen.at(-1)![0]).toBe("delete");
    const versions = seen.map(([, , rv]) => Number(rv));
    expect(versions).toEqual([...versions].sort((a, b) => a - b));
    expect(result.cached).toBeNull();
    expect(result.errors).toEqual([]);
  }, 120_000);

  test("Watch brings the initial pods then the initial-events-end bookmark, and a version too old an ERROR 410 Expired", async () => {
    const [result] = await drive("watch");
    expect(result.events[0].slice(0, 2)).toEqual(["ADDED", WEB]);
    expect(result.events.at(-1)).toEqual(["BOOKMARK", null, { "k8s.io/initial-events-end": "true" }]);
    expect(result.expired).toEqual([
      ["ERROR", expect.objectContaining({ kind: "Status", code: 410, reason: "Expired" })],
    ]);
  });

  test("an informer restarted after the kubelet restarts is answered 410 for its old version and relists", async () => {
    const [ready, result] = await drive("relist", WEB, "", async (line) => {
      if (line.ready) {
        await kubelet.stop("SIGTERM");
        await start();
      }
    });
    expect(ready).toEqual({ ready: true, lists: 1 });
    expect(result.lists).toBeGreaterThanOrEqual(2);
    expect(Number(result.after)).toBeGreaterThan(Number(result.before));
  }, 150_000);

  test("Log with follow streams the lines the container writes after it started", async () => {
    const [result] = await drive("log", WEB);
    const numbers = (result.lines as string[]).map((line) => Number(line.replace("line ", "")));
    expect(numbers.length).toBeGreaterThanOrEqual(4);
    expect(numbers).toEqual(numbers.map((_, i) => numbers[0]! + i));
  });

  test("Exec passes stdin to the command and returns its stdout, stderr and a Success status", async () => {
    const out = collector();
    const err = collector();
    const stdin = new PassThrough();
    let status: V1Status | undefined;
    await new Exec(kc).exec(
      "default",
      WEB,
      "main",
      ["sh", "-c", "read line; echo got $line; echo oops >&2"],
      out.stream,
      err.stream,
      stdin,
      false,
      (s) => (status = s),
    );
    stdin.write("hello\n");
    await waitFor("the exec's status", () => status, 20_000);
    expect(status?.status).toBe("Success");
    expect(out.text()).toBe("got hello\n");
    expect(err.text()).toBe("oops\n");
  });

  test("PortForward carries bytes both ways to a port inside the network-none pod", async () => {
    const forward = new PortForward(kc);
    const server = createServer(
      (socket) => void forward.portForward("default", WEB, [ECHO_PORT], socket, null, socket),
    );
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    try {
      const reply = await new Promise<string>((resolve, reject) => {
        const socket = connect((server.address() as AddressInfo).port, "127.0.0.1");
        let text = "";
        socket.on("data", (d) => {
          text += d;
          if (text.includes("\n")) {
            socket.destroy();
            resolve(text);
          }
        });
        socket.on("error", reject);
        socket.on("connect", () => socket.write("through javascript\n"));
      });
      expect(reply).toBe("through javascript\n");
    } finally {
      server.close();
    }
  });

  test("Metrics reads the pod's and the node's usage from metrics.k8s.io", async () => {
    const [result] = await drive("metrics", WEB);
    expect(result.pod.containers.map((c: { name: string }) => c.name).sort()).toEqual(["echo", "main"]);
    expect(result.pod.containers[0].usage.memory).toMatch(/^\d+Ki$/);
    expect(result.nodes).toHaveLength(1);
    expect(result.nodes[0].usage.cpu).toMatch(/^\d+n$/);
  }, 90_000);
});
