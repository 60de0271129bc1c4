import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DEFAULT_CONFIG, type KubeletConfig } from "../config/config-types.ts";
import { markClientCertificate } from "../platform/client-certificate.ts";
import { FakeClock } from "../testing/fake-clock.ts";
import { loadAuthenticator } from "./auth.ts";
import { ANONYMOUS, type UserInfo } from "./authorizer.ts";
import { SUBJECT_ACCESS_REVIEW_PATH } from "./authn/subject-access-review.ts";
import { TOKEN_REVIEW_PATH } from "./authn/token-review.ts";
import type { WebhookClient } from "./authn/webhook-client.ts";

const dir = mkdtempSync(join(tmpdir(), "auth-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const bearer = (token: string) => new Request("http://x/pods", { headers: { authorization: `Bearer ${token}` } });

/** A webhook that allows what `allow` says and knows the token "hooked"; `down` makes every call fail. */
function fakeWebhook(allow: (spec: { user: string; resourceAttributes: { subresource: string } }) => boolean) {
  const calls: string[] = [];
  const state = { down: false };
  const client: WebhookClient = {
    server: "https://127.0.0.1:6443",
    async post(path, body) {
      const spec = (body as { spec: Record<string, unknown> }).spec;
      calls.push(
        path === TOKEN_REVIEW_PATH
          ? "TokenReview"
          : `SAR ${(spec.resourceAttributes as { subresource: string }).subresource}`,
      );
      if (state.down) throw new Error("connect ECONNREFUSED 127.0.0.1:6443");
      if (path === TOKEN_REVIEW_PATH)
        return spec.token === "hooked"
          ? { status: { authenticated: true, user: { username: "carol", uid: "7", groups: ["scrapers"] } } }
          : { status: { authenticated: false } };
      expect(path).toBe(SUBJECT_ACCESS_REVIEW_PATH);
      return { status: { allowed: allow(spec as never), reason: "test policy" } };
    },
  };
  return { client, calls, state };
}

test("a token file line authenticates as its user and groups; a bare token as kubelet-token-<line>", async () => {
  const file = join(dir, "tokens");
  writeFileSync(file, 'ops-token,alice,1001,"ops"\nbare-token\n');
  const auth = await loadAuthenticator({ ...DEFAULT_CONFIG, authTokenFile: file });
  expect(await auth.authenticate(bearer("ops-token"))).toEqual({
    name: "alice",
    uid: "1001",
    groups: ["ops", "system:authenticated"],
  });
  expect(await auth.authenticate(bearer("bare-token"))).toEqual({
    name: "kubelet-token-2",
    groups: ["system:authenticated"],
  });
  expect(await auth.authenticate(bearer("other"))).toBe("unauthenticated");
  expect(await auth.authenticate(new Request("http://x/pods"))).toBe(ANONYMOUS);
});

test("a verified client certificate authenticates as its CN with its O values as groups", async () => {
  const config: KubeletConfig = { ...DEFAULT_CONFIG, clientCaFile: "/ca", tlsCertFile: "/c", tlsPrivateKeyFile: "/k" };
  const files = { "/ca": "CA", "/c": "CERT", "/k": "KEY" };
  for (const [path, text] of Object.entries(files)) writeFileSync(join(dir, path.slice(1)), text);
  const auth = await loadAuthenticator({
    ...config,
    clientCaFile: join(dir, "ca"),
    tlsCertFile: join(dir, "c"),
    tlsPrivateKeyFile: join(dir, "k"),
  });
  const request = new Request("https://x/pods");
  markClientCertificate(request, { CN: "scraper", O: ["monitoring", "ops"] });
  expect(await auth.authenticate(request)).toEqual({
    name: "scraper",
    groups: ["monitoring", "ops", "system:authenticated"],
  });
  const single = new Request("https://x/pods");
  markClientCertificate(single, { CN: "solo", O: "team" });
  expect(await auth.authenticate(single)).toEqual({ name: "solo", groups: ["team", "system:authenticated"] });
  // Upstream's CommonNameUserConversion: a certificate without a CN names nobody.
  const nameless = new Request("https://x/pods");
  markClientCertificate(nameless, { O: "team" });
  expect(await auth.authenticate(nameless)).toBe(ANONYMOUS);
});

test("TokenReview authenticates tokens the file does not hold, and its answers are cached for cacheTTL", async () => {
  const clock = new FakeClock();
  const hook = fakeWebhook(() => true);
  const config = { ...DEFAULT_CONFIG, authenticationTokenWebhook: true, authenticationTokenWebhookCacheTtl: 60_000 };
  const auth = await loadAuthenticator(config, { client: hook.client, clock });
  const carol = { name: "carol", uid: "7", groups: ["scrapers", "system:authenticated"] };
  expect(await auth.authenticate(bearer("hooked"))).toEqual(carol);
  expect(await auth.authenticate(bearer("nope"))).toBe("unauthenticated");
  hook.state.down = true;
  expect(await auth.authenticate(bearer("hooked"))).toEqual(carol);
  await clock.advance(60_000);
  expect(await auth.authenticate(bearer("hooked"))).toBe("unauthenticated");
  expect(hook.calls).toEqual(["TokenReview", "TokenReview", "TokenReview"]);
});

test("Webhook mode allows when the fine-grained or the proxy check allows, and words a refusal as the Go kubelet", async () => {
  const clock = new FakeClock();
  const hook = fakeWebhook((spec) => spec.user === "alice" || spec.resourceAttributes.subresource === "metrics");
  const auth = await loadAuthenticator(
    { ...DEFAULT_CONFIG, authorizationMode: "Webhook" },
    { client: hook.client, clock, nodeName: "node-a" },
  );
  const bob: UserInfo = { name: "bob", groups: ["system:authenticated"] };
  expect((await auth.authorize(bob, "GET", "/metrics/cadvisor")).refusal).toBeUndefined();
  const pods = await auth.authorize(bob, "GET", "/pods");
  expect(pods.refusal).toEqual({
    status: 403,
    message: "Forbidden (user=bob, verb=get, resource=nodes, subresource(s)=[pods proxy])",
  });
  const run = await auth.authorize(bob, "POST", "/run/default/web/app");
  expect(run.refusal).toEqual({
    status: 403,
    message: "Forbidden (user=bob, verb=create, resource=nodes, subresource=proxy)",
  });
  expect(run.attributes).toMatchObject({ name: "node-a", resource: "nodes", subresource: "proxy", verb: "create" });
  expect(run.result).toEqual({ decision: "no-opinion", reason: "test policy" });
  const alice = await auth.authorize({ name: "alice", groups: [] }, "GET", "/pods");
  expect([alice.refusal, alice.attributes.subresource]).toEqual([undefined, "pods"]);
});

test("Webhook mode fails closed when the webhook is down, and cached answers carry a scrape through the outage", async () => {
  const clock = new FakeClock();
  const hook = fakeWebhook((spec) => spec.resourceAttributes.subresource === "metrics");
  const lines: string[] = [];
  const log = { debug() {}, info() {}, warn: (m: string) => lines.push(m), error() {}, child: () => log };
  const config = {
    ...DEFAULT_CONFIG,
    authorizationMode: "Webhook" as const,
    authorizationWebhookCacheAuthorizedTtl: 300_000,
    authorizationWebhookCacheUnauthorizedTtl: 30_000,
  };
  const auth = await loadAuthenticator(config, { client: hook.client, clock, log });
  const scraper: UserInfo = { name: "scraper", groups: [] };
  expect((await auth.authorize(scraper, "GET", "/metrics")).refusal).toBeUndefined();
  expect((await auth.authorize(scraper, "GET", "/stats/summary")).refusal?.status).toBe(403);
  hook.state.down = true;
  await clock.advance(299_000);
  expect((await auth.authorize(scraper, "GET", "/metrics")).refusal).toBeUndefined();
  // The refusal was cached for 30 s only: past it, the webhook is asked and cannot answer.
  const down = await auth.authorize(scraper, "GET", "/stats/summary");
  expect(down.refusal).toEqual({
    status: 500,
    message: "Authorization error (user=scraper, verb=get, resource=nodes, subresource=stats)",
  });
  expect(down.result.decision).toBe("deny");
  expect(lines).toEqual([
    "Authorization error (user=scraper, verb=get, resource=nodes, subresource=stats): the Webhook authorizer at https://127.0.0.1:6443 did not answer: connect ECONNREFUSED 127.0.0.1:6443; refusing GET /stats/summary (fail closed)",
  ]);
  await clock.advance(1_000);
  expect((await auth.authorize(scraper, "GET", "/metrics")).refusal?.status).toBe(500);
});

test("RBAC mode loads rbac's factory with the policy file and asks it", async () => {
  const seen: string[] = [];
  const rbac = async (options: { file: string }) => {
    seen.push(options.file);
    return {
      authorize: async (a: { user: UserInfo; subresource: string }) => ({
        decision: a.user.name === "reader" && a.subresource === "log" ? ("allow" as const) : ("no-opinion" as const),
        reason: "",
      }),
      stop: () => seen.push("stopped"),
    };
  };
  const config = {
    ...DEFAULT_CONFIG,
    authorizationMode: "RBAC" as const,
    authorizationPolicyFile: "/etc/kubelet/rbac.yaml",
  };
  const auth = await loadAuthenticator(config, { rbac });
  const reader = { name: "reader", groups: [] };
  expect((await auth.authorize(reader, "GET", "/logs/syslog")).refusal).toBeUndefined();
  expect((await auth.authorize(reader, "POST", "/run/default/web/app")).refusal?.status).toBe(403);
  auth.stop();
  expect(seen).toEqual(["/etc/kubelet/rbac.yaml", "stopped"]);
  await expect(loadAuthenticator({ ...config, authorizationPolicyFile: "" })).rejects.toThrow(
    "authorization.mode RBAC needs --authorization_policy_file",
  );
});
