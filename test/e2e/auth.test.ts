// Authentication of the compiled binary's info server as the Go kubelet's, as a table: every route ×
// no token / a wrong token / the token / a client certificate × anonymous auth on and off, on the
// plain port and on the TLS port with --client_ca_file (requested, not required, so tokens work over
// TLS too), and the read-only port, which authenticates nobody and serves reads only.
import { afterAll, beforeAll, expect } from "bun:test";
import { spawnSync } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describeWithServices } from "../../lib/testing/services.ts";
import { Kubelet, killKubeletsAfterAll, test } from "./harness-kubelet.ts";
import { runtimeUnderTest } from "./harness-runtimes.ts";
import { baseFlags, freePort, removeDir, tempDir } from "./harness.ts";

const TOKEN = "auth-table-token";
/** Read routes, then debugging and write routes (a container that does not exist: 404 once let in). */
const ROUTES = [
  "GET /healthz",
  "GET /pods",
  "GET /spec/",
  "GET /stats/summary",
  "GET /metrics",
  "GET /metrics/cadvisor",
  "GET /metrics/resource",
  "GET /metrics/probes",
  "GET /configz",
  "GET /containerLogs/default/none/app",
  "POST /run/default/none/app?cmd=id",
];
const DEBUG = new Set(["GET /containerLogs/default/none/app", "POST /run/default/none/app?cmd=id"]);
type Credential = "none" | "wrong token" | "token" | "client cert";

// Docker only: authentication is the server's own, the same on either runtime.
describeWithServices("authentication as the Go kubelet's", (services) => {
  const dir = tempDir("auth-table");
  const roots: string[] = [];
  const rt = runtimeUnderTest(services, "docker");
  const sh = (command: string) => {
    const result = spawnSync("sh", ["-c", command], { cwd: dir, encoding: "utf8" });
    if (result.status !== 0) throw new Error(`${command}: ${result.stderr}`);
  };

  beforeAll(() => {
    mkdirSync(join(dir, "manifests"));
    writeFileSync(join(dir, "tokens"), `${TOKEN}\n`);
    sh("openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 1 -subj /CN=e2e-ca");
    sh(
      "openssl req -newkey rsa:2048 -nodes -keyout server.key -out server.csr -subj /CN=127.0.0.1 && printf 'subjectAltName=IP:127.0.0.1' > ext && openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out server.crt -days 1 -extfile ext",
    );
    sh(
      "openssl req -newkey rsa:2048 -nodes -keyout client.key -out client.csr -subj /CN=operator && openssl x509 -req -in client.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out client.crt -days 1",
    );
  });
  killKubeletsAfterAll();
  afterAll(() => {
    rt.close();
    removeDir(dir);
    for (const root of roots) removeDir(root);
  });

  /** The status curl sees for `route` with `credential` ("000": the connection was refused). */
  const status = (base: string, route: string, credential: Credential) => {
    const [method, path] = route.split(" ") as [string, string];
    const args = ["-s", "-o", "/dev/null", "-w", "%{http_code}", "-X", method, "--cacert", join(dir, "ca.crt")];
    if (credential === "wrong token") args.push("-H", "Authorization: Bearer not-the-token");
    if (credential === "token") args.push("-H", `Authorization: Bearer ${TOKEN}`);
    if (credential === "client cert") args.push("--cert", join(dir, "client.crt"), "--key", join(dir, "client.key"));
    return spawnSync("curl", [...args, `${base}${path}`], { encoding: "utf8" }).stdout;
  };

  const start = async (tls: boolean, anonymous: boolean, readOnlyPort?: number) => {
    const root = tempDir("auth-table-root");
    roots.push(root);
    const port = await freePort();
    const base = `${tls ? "https" : "http"}://127.0.0.1:${port}`;
    const kubelet = new Kubelet(
      [
        "run",
        "-c",
        join(dir, "manifests"),
        ...baseFlags(services, root),
        "--auth_token_file",
        join(dir, "tokens"),
        `--anonymous_auth=${anonymous}`,
        ...(tls
          ? [
              "--tls_cert_file",
              join(dir, "server.crt"),
              "--tls_private_key_file",
              join(dir, "server.key"),
              "--client_ca_file",
              join(dir, "ca.crt"),
            ]
          : []),
        ...(readOnlyPort ? ["--read_only_port", String(readOnlyPort)] : []),
      ],
      port,
    );
    await kubelet.waitFor("the server", () => status(base, "GET /healthz", "token") === "200", 20_000);
    return { kubelet, base };
  };

  /** route → credential → "401" or "in" (any answer past authentication). */
  const table = (base: string, credentials: Credential[]) =>
    Object.fromEntries(
      ROUTES.map((route) => [
        route,
        Object.fromEntries(
          credentials.map((c) => {
            const code = status(base, route, c);
            return [c, code === "401" || code === "000" ? code : "in"];
          }),
        ),
      ]),
    );
  const expected = (credentials: Credential[], anonymous: boolean) =>
    Object.fromEntries(
      ROUTES.map((route) => [
        route,
        Object.fromEntries(
          credentials.map((c) => [
            c,
            c === "wrong token" || (c === "none" && (!anonymous || DEBUG.has(route))) ? "401" : "in",
          ]),
        ),
      ]),
    );

  for (const anonymous of [false, true]) {
    test(`plain port, anonymous ${anonymous ? "on" : "off"}: ${anonymous ? "reads open, debugging routes need the token" : "every route needs the token"}; a wrong token is 401 everywhere`, async () => {
      const { kubelet, base } = await start(false, anonymous);
      const credentials: Credential[] = ["none", "wrong token", "token"];
      expect(table(base, credentials)).toEqual(expected(credentials, anonymous));
      await kubelet.stop("SIGKILL");
    }, 60_000);

    test(`TLS port with --client_ca_file, anonymous ${anonymous ? "on" : "off"}: a client certificate or the token lets in, a client without a certificate is not refused at the handshake`, async () => {
      const { kubelet, base } = await start(true, anonymous);
      const credentials: Credential[] = ["none", "wrong token", "token", "client cert"];
      expect(table(base, credentials)).toEqual(expected(credentials, anonymous));
      await kubelet.stop("SIGKILL");
    }, 60_000);
  }

  test("exec over the TLS port with --client_ca_file streams with a client certificate alone, the socket served by node:tls", async () => {
    writeFileSync(
      join(dir, "manifests", "exec.yaml"),
      `apiVersion: v1
kind: Pod
metadata: { name: e2e-auth-exec }
spec:
  terminationGracePeriodSeconds: 1
  containers: [{ name: app, image: ${services.busybox}, command: ["sleep", "3600"] }]
`,
    );
    const { kubelet, base } = await start(true, false);
    try {
      await kubelet.waitFor(
        "the pod running",
        () =>
          spawnSync(
            "curl",
            ["-s", "--cacert", join(dir, "ca.crt"), "-H", `Authorization: Bearer ${TOKEN}`, `${base}/pods`],
            {
              encoding: "utf8",
            },
          ).stdout.includes('"running":{'),
        60_000,
      );
      const read = (file: string) => readFileSync(join(dir, file), "utf8");
      const url = `${base.replace("https", "wss")}/exec/default/e2e-auth-exec/app?command=sh&command=-c&command=echo+tls-ok&output=1`;
      const frames = await new Promise<string[]>((resolve, reject) => {
        const Socket = WebSocket as unknown as new (url: string, options: object) => WebSocket;
        const socket = new Socket(url, {
          protocols: ["v5.channel.k8s.io"],
          tls: { ca: read("ca.crt"), cert: read("client.crt"), key: read("client.key") },
        });
        socket.binaryType = "arraybuffer";
        const received: string[] = [];
        socket.onmessage = (event: MessageEvent) => {
          const bytes = new Uint8Array(event.data as ArrayBuffer);
          received.push(`${bytes[0]}:${new TextDecoder().decode(bytes.subarray(1))}`);
        };
        socket.onerror = () => reject(new Error("the WebSocket failed"));
        socket.onclose = () => resolve(received);
      });
      expect(frames).toEqual(["1:", "1:tls-ok\n", `3:${JSON.stringify({ metadata: {}, status: "Success" })}`]);
    } finally {
      await kubelet.stop("SIGKILL");
      rmSync(join(dir, "manifests", "exec.yaml"));
      await rt.removePods("e2e-auth-exec");
    }
  }, 90_000);

  test("the read-only port authenticates nobody and serves reads only, while the main port is closed", async () => {
    const readOnly = await freePort();
    const { kubelet, base } = await start(false, false, readOnly);
    const open = `http://127.0.0.1:${readOnly}`;
    expect(status(base, "GET /pods", "none")).toBe("401");
    expect(["none", "wrong token"].map((c) => status(open, "GET /metrics/cadvisor", c as Credential))).toEqual([
      "200",
      "200",
    ]);
    expect(status(open, "POST /run/default/none/app?cmd=id", "token")).toBe("403");
    expect(kubelet.output).toMatch(
      /anonymous.enabled is false: every route of 127\.0\.0\.1:\d+ requires a bearer token from --auth_token_file .*; the read-only port \d+ stays unauthenticated \(GET routes only\)/,
    );
    await kubelet.stop("SIGKILL");
  }, 60_000);
});
