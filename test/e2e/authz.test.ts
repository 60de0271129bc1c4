// Identities and authorization modes of the compiled binary against a REAL webhook process (a stand-in API server
// answering TokenReview and SubjectAccessReview over TLS with client certificates): allowed, denied (403 worded as
// the Go kubelet), the webhook down (fail closed) and its cache carrying a scrape through a short outage; token-file
// identities and client-certificate identities (CN, O); and the default configuration, where an unauthenticated
// loopback caller cannot run a command while the generated admin token can.
import { afterAll, beforeAll, expect } from "bun:test";
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createTestCa } from "../../lib/testing/certificates.ts";
import { describeWithServices } from "../../lib/testing/services.ts";
import { Kubelet, killKubeletsAfterAll, test, waitFor } from "./harness-kubelet.ts";
import { runtimeUnderTest } from "./harness-runtimes.ts";
import { baseFlags, freePort, removeDir, tempDir } from "./harness.ts";

const POD = "e2e-authz";

describeWithServices("identities and webhook authorization", (services) => {
  const dir = tempDir("authz");
  const roots: string[] = [];
  const rt = runtimeUnderTest(services, "docker");
  const ca = createTestCa(dir, "authz-ca");
  const serving = ca.server("serving", { ips: ["127.0.0.1"] });
  const kubeletClient = ca.client("kubelet", ["system:nodes"]);
  const operatorCert = ca.client("ops-cert", ["ops", "monitoring"]);
  let webhookPort = 0;
  let webhook: { child: ChildProcess; output: string } | undefined;
  let kubelet: Kubelet;
  let base = "";

  const startWebhook = async () => {
    const child = spawn(process.execPath, ["lib/testing/webhook-server.ts", join(dir, "policy.json")], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    const running = { child, output: "" };
    child.stdout!.on("data", (d) => (running.output += d));
    child.stderr!.on("data", (d) => (running.output += d));
    await waitFor("the webhook listening", () => running.output.includes(`listening ${webhookPort}`), 10_000);
    webhook = running;
  };
  const stopWebhook = async () => {
    const child = webhook!.child;
    if (child.exitCode === null && child.signalCode === null)
      await new Promise((done) => (child.once("exit", done), child.kill("SIGKILL")));
  };

  /** curl against the kubelet's TLS port: the status and the body. */
  const call = (
    path: string,
    who: { token?: string; cert?: { certFile: string; keyFile: string } } = {},
    method = "GET",
  ) => {
    const args = ["-s", "-w", "\n%{http_code}", "-X", method, "--cacert", ca.caFile];
    if (who.token) args.push("-H", `Authorization: Bearer ${who.token}`);
    if (who.cert) args.push("--cert", who.cert.certFile, "--key", who.cert.keyFile);
    const out = spawnSync("curl", [...args, `${base}${path}`], { encoding: "utf8" }).stdout;
    const at = out.lastIndexOf("\n");
    return { status: Number(out.slice(at + 1)), body: out.slice(0, at) };
  };

  beforeAll(async () => {
    mkdirSync(join(dir, "manifests"));
    mkdirSync(join(dir, "default-manifests"));
    webhookPort = await freePort();
    writeFileSync(
      join(dir, "policy.json"),
      JSON.stringify({
        cert: readFileSync(serving.certFile, "utf8"),
        key: readFileSync(serving.keyFile, "utf8"),
        ca: readFileSync(ca.caFile, "utf8"),
        port: webhookPort,
        tokens: { "scrape-token": { username: "scraper" }, "ops-token": { username: "operator", groups: ["ops"] } },
        allow: [
          { user: "scraper", subresource: "metrics", verb: "get" },
          { user: "operator", subresource: "proxy" },
          { user: "alice", subresource: "stats" },
          // Only the certificate's O: the kubelet must read the subject to be let in.
          { group: "monitoring", subresource: "pods", verb: "get" },
        ],
      }),
    );
    writeFileSync(join(dir, "tokens"), 'alice-token,alice,1001,"ops"\nbare-token\n');
    writeFileSync(
      join(dir, "kubeconfig"),
      `apiVersion: v1
kind: Config
current-context: webhook
contexts: [{ name: webhook, context: { cluster: local, user: kubelet } }]
clusters: [{ name: local, cluster: { server: "https://127.0.0.1:${webhookPort}", certificate-authority: ${ca.caFile} } }]
users: [{ name: kubelet, user: { client-certificate: ${kubeletClient.certFile}, client-key: ${kubeletClient.keyFile} } }]
`,
    );
    await startWebhook();
    const root = tempDir("authz-root");
    roots.push(root);
    const port = await freePort();
    base = `https://127.0.0.1:${port}`;
    kubelet = new Kubelet(
      [
        "run",
        "-c",
        join(dir, "manifests"),
        ...baseFlags(services, root),
        "--anonymous_auth=false",
        "--authorization_mode",
        "Webhook",
        "--authentication_token_webhook",
        "--kubeconfig",
        join(dir, "kubeconfig"),
        "--auth_token_file",
        join(dir, "tokens"),
        "--tls_cert_file",
        serving.certFile,
        "--tls_private_key_file",
        serving.keyFile,
        "--client_ca_file",
        ca.caFile,
        "--authorization_webhook_cache_authorized_ttl",
        "5m",
        "--authorization_webhook_cache_unauthorized_ttl",
        "1s",
        "--authentication_token_webhook_cache_ttl",
        "5m",
      ],
      port,
    );
    await kubelet.waitFor("the server", () => call("/healthz", { token: "ops-token" }).status === 200, 20_000);
  });
  killKubeletsAfterAll();
  afterAll(async () => {
    if (webhook) await stopWebhook();
    rt.close();
    removeDir(dir);
    for (const root of roots) removeDir(root);
  });

  /** Waits until the webhook's (or the kubelet's) output, read while curl blocked the loop, contains `text`. */
  const said = (what: () => string, text: string | RegExp) =>
    waitFor(`output with ${text}`, () => (typeof text === "string" ? what().includes(text) : text.test(what())), 5_000);

  test("a TokenReview user the webhook grants metrics scrapes, and its exec is refused with the Go kubelet's 403", async () => {
    expect(call("/metrics", { token: "scrape-token" }).status).toBe(200);
    expect(call("/run/default/none/app?cmd=id", { token: "scrape-token" }, "POST")).toEqual({
      status: 403,
      body: "Forbidden (user=scraper, verb=create, resource=nodes, subresource=proxy)",
    });
    // operator holds nodes/proxy: let in, and the container does not exist.
    expect(call("/run/default/none/app?cmd=id", { token: "ops-token" }, "POST").status).toBe(404);
    expect(call("/metrics", { token: "unknown-token" }).status).toBe(401);
    await said(() => webhook!.output, "review SubjectAccessReview scraper create proxy not allowed");
    await said(() => webhook!.output, "review TokenReview unknown token");
  });

  test("token-file identities: a kube-apiserver line is its user, a bare token is kubelet-token-<line>", async () => {
    expect(call("/stats/summary", { token: "alice-token" }).status).not.toBeOneOf([401, 403]);
    expect(call("/metrics", { token: "alice-token" })).toEqual({
      status: 403,
      body: "Forbidden (user=alice, verb=get, resource=nodes, subresource=metrics)",
    });
    expect(call("/metrics", { token: "bare-token" }).body).toBe(
      "Forbidden (user=kubelet-token-2, verb=get, resource=nodes, subresource=metrics)",
    );
    await said(() => webhook!.output, "review SubjectAccessReview kubelet-token-2 get metrics not allowed");
    expect(webhook!.output).not.toContain("review TokenReview alice");
  });

  test("a client certificate is its CN with its O values as groups: the webhook grants the O group and names the CN", async () => {
    expect(call("/pods", { cert: operatorCert }).status).toBe(200);
    expect(call("/metrics", { cert: operatorCert })).toEqual({
      status: 403,
      body: "Forbidden (user=ops-cert, verb=get, resource=nodes, subresource=metrics)",
    });
    await said(() => webhook!.output, "review SubjectAccessReview ops-cert get pods allowed");
  });

  test("with the webhook down a cached scrape keeps working, anything not cached fails closed, and it recovers", async () => {
    expect(call("/metrics", { token: "scrape-token" }).status).toBe(200);
    await stopWebhook();
    expect(call("/metrics", { token: "scrape-token" }).status).toBe(200);
    expect(call("/metrics/cadvisor", { token: "scrape-token" }).status).toBe(200);
    expect(call("/spec/", { token: "scrape-token" })).toEqual({
      status: 500,
      body: "Authorization error (user=scraper, verb=get, resource=nodes, subresource=spec)",
    });
    expect(call("/metrics", { token: "never-seen-token" }).status).toBe(401);
    await said(
      () => kubelet.output,
      /Authorization error \(user=scraper, verb=get, resource=nodes, subresource=spec\): the Webhook authorizer at https:\/\/127\.0\.0\.1:\d+ did not answer: .*refusing GET \/spec\/ \(fail closed\)/,
    );
    await said(() => kubelet.output, "did not answer a TokenReview");
    await startWebhook();
    expect(call("/spec/", { token: "scrape-token" }).body).toBe(
      "Forbidden (user=scraper, verb=get, resource=nodes, subresource=spec)",
    );
  }, 30_000);

  test("the default configuration: an unauthenticated loopback caller cannot run a command; the admin token can", async () => {
    writeFileSync(
      join(dir, "default-manifests", "pod.yaml"),
      `apiVersion: v1
kind: Pod
metadata: { name: ${POD} }
spec:
  terminationGracePeriodSeconds: 1
  containers: [{ name: app, image: ${services.busybox}, command: ["sleep", "3600"] }]
`,
    );
    // One kubelet per daemon at a time: the webhook's kubelet would stop this pod (no source of its own lists it).
    await kubelet.stop("SIGKILL");
    const root = tempDir("authz-default");
    roots.push(root);
    const local = new Kubelet(
      ["run", "-c", join(dir, "default-manifests"), ...baseFlags(services, root)],
      await freePort(),
    );
    try {
      await local.healthy();
      await local.waitFor("the pod running", () => rt.running(POD, "app"), 60_000);
      const path = `/run/default/${POD}/app?cmd=id`;
      const anonymous = await local.api(path, { method: "POST" });
      expect(anonymous.status).toBe(401);
      expect((await local.api(`/containerLogs/default/${POD}/app`)).status).toBe(401);
      expect((await local.api("/pods", { method: "PUT", body: "[]" })).status).toBe(401);
      expect(statSync(join(root, "admin-token")).mode & 0o777).toBe(0o600);
      const admin = await local.admin(path, { method: "POST" });
      expect([admin.status, await admin.text()]).toEqual([200, expect.stringContaining("uid=0(root)")]);
      expect((await local.api("/pods")).status).toBe(200);
      expect(local.output).toContain(
        `debugging and write routes require the admin token \\"${join(root, "admin-token")}\\", on loopback too`,
      );
    } finally {
      await local.stop("SIGKILL");
      await rt.removePods(POD);
    }
  }, 90_000);
});
