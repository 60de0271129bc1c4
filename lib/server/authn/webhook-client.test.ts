import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { createTestCa } from "../../testing/certificates.ts";
import { startWebhookServer, type RunningWebhook } from "../../testing/webhook-server.ts";
import { TOKEN_REVIEW_PATH } from "./token-review.ts";
import { createWebhookClient, loadKubeconfig } from "./webhook-client.ts";

const dir = mkdtempSync(join(tmpdir(), "webhook-client-"));
const ca = createTestCa(dir, "webhook-ca");
const serving = ca.server("webhook", { ips: ["127.0.0.1"] });
const client = ca.client("kubelet", ["system:nodes"]);
let webhook: RunningWebhook;
beforeAll(async () => {
  webhook = await startWebhookServer({
    cert: readFileSync(serving.certFile, "utf8"),
    key: readFileSync(serving.keyFile, "utf8"),
    ca: readFileSync(ca.caFile, "utf8"),
    tokens: { t1: { username: "alice", groups: ["ops"] } },
    allow: [],
  });
});
afterAll(async () => {
  await webhook.close();
  rmSync(dir, { recursive: true, force: true });
});

const kubeconfig = (name: string, user: string) => {
  const path = join(dir, name);
  writeFileSync(
    path,
    `apiVersion: v1
kind: Config
current-context: webhook
contexts:
- name: other
  context: { cluster: nowhere, user: nobody }
- name: webhook
  context: { cluster: local, user: kubelet }
clusters:
- name: nowhere
  cluster: { server: "https://10.0.0.1" }
- name: local
  cluster:
    server: https://127.0.0.1:${webhook.port}/
    certificate-authority: ${basename(ca.caFile)}
users:
- name: kubelet
  user:
${user}
`,
  );
  return path;
};

test("a kubeconfig's current context gives the server, its CA (relative to the file) and the client certificate", async () => {
  const path = kubeconfig(
    "files.yaml",
    `    client-certificate: ${client.certFile}\n    client-key: ${client.keyFile}`,
  );
  const target = await loadKubeconfig(path);
  expect(target.server).toBe(`https://127.0.0.1:${webhook.port}`);
  expect(target.ca).toBe(readFileSync(ca.caFile, "utf8"));
  const answer = await createWebhookClient(target).post(TOKEN_REVIEW_PATH, {
    kind: "TokenReview",
    spec: { token: "t1" },
  });
  expect(answer).toMatchObject({ status: { authenticated: true, user: { username: "alice", groups: ["ops"] } } });
});

test("inline -data fields are read as base64", async () => {
  const b64 = (file: string) => readFileSync(file).toString("base64");
  const path = kubeconfig(
    "inline.yaml",
    `    client-certificate-data: ${b64(client.certFile)}\n    client-key-data: ${b64(client.keyFile)}`,
  );
  const answer = await createWebhookClient(await loadKubeconfig(path)).post(TOKEN_REVIEW_PATH, {
    kind: "TokenReview",
    spec: { token: "nope" },
  });
  expect(answer).toMatchObject({ status: { authenticated: false } });
});

test("without the client certificate the webhook refuses the TLS handshake, and the post fails", async () => {
  const path = kubeconfig("nocert.yaml", "    token: abc");
  await expect(createWebhookClient(await loadKubeconfig(path)).post(TOKEN_REVIEW_PATH, {})).rejects.toThrow();
});

test("a kubeconfig without a server for its context is refused, naming the file", async () => {
  const path = join(dir, "empty.yaml");
  writeFileSync(path, "apiVersion: v1\nkind: Config\n");
  await expect(loadKubeconfig(path)).rejects.toThrow(
    `--kubeconfig "${path}": no cluster with a server for the current context`,
  );
});
