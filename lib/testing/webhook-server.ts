// A stand-in API server for the kubelet's webhooks: answers TokenReview and SubjectAccessReview over TLS on
// 127.0.0.1 (client certificates required), from a policy given as JSON; run as a process by the e2e tests
// (`bun lib/testing/webhook-server.ts <policy.json>`: prints `listening <port>`, one `review …` line per call).
import { createServer, type Server } from "node:https";
import { readFileSync, writeSync } from "node:fs";

/** Tokens and who they are; grants of a subresource (any verb unless named) to a user or to a group. */
export interface WebhookPolicy {
  cert: string;
  key: string;
  /** CA that signs the callers' client certificates. */
  ca: string;
  port?: number;
  tokens: Record<string, { username: string; groups?: string[] }>;
  allow: Array<{ user?: string; group?: string; subresource: string; verb?: string }>;
}

export interface RunningWebhook {
  port: number;
  server: Server;
  close(): Promise<void>;
}

/** Serves the policy; `onReview` hears one line per review answered. */
export function startWebhookServer(
  policy: WebhookPolicy,
  onReview: (line: string) => void = () => {},
): Promise<RunningWebhook> {
  const server = createServer(
    { cert: policy.cert, key: policy.key, ca: policy.ca, requestCert: true, rejectUnauthorized: true },
    (req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        const review = JSON.parse(Buffer.concat(chunks).toString("utf8") || "{}") as {
          kind?: string;
          spec?: Record<string, unknown>;
        };
        const spec = review.spec ?? {};
        let status: Record<string, unknown>;
        if (req.url === "/apis/authentication.k8s.io/v1/tokenreviews") {
          const user = policy.tokens[String(spec.token)];
          status = user
            ? { authenticated: true, user: { username: user.username, groups: user.groups ?? [] } }
            : { authenticated: false };
          onReview(`review TokenReview ${user ? user.username : "unknown token"}`);
        } else if (req.url === "/apis/authorization.k8s.io/v1/subjectaccessreviews") {
          const attributes = (spec.resourceAttributes ?? {}) as { verb?: string; subresource?: string };
          const allowed = policy.allow.some(
            (g) =>
              (g.user === undefined || g.user === spec.user) &&
              (g.group === undefined || (spec.groups as string[] | undefined)?.includes(g.group) === true) &&
              g.subresource === attributes.subresource &&
              (!g.verb || g.verb === attributes.verb),
          );
          status = { allowed, reason: allowed ? "granted by the test policy" : "" };
          onReview(
            `review SubjectAccessReview ${spec.user} ${attributes.verb} ${attributes.subresource} ${allowed ? "allowed" : "not allowed"}`,
          );
        } else {
          res.writeHead(404).end();
          return;
        }
        res.writeHead(201, { "content-type": "application/json" });
        res.end(
          JSON.stringify({
            apiVersion: review.kind === "TokenReview" ? "authentication.k8s.io/v1" : "authorization.k8s.io/v1",
            kind: review.kind,
            status,
          }),
        );
      });
    },
  );
  return new Promise((resolve) => {
    server.listen(policy.port ?? 0, "127.0.0.1", () => {
      const port = (server.address() as { port: number }).port;
      resolve({
        port,
        server,
        close: () => new Promise((done) => server.close(() => done())),
      });
    });
  });
}

if (import.meta.main) {
  const policy = JSON.parse(readFileSync(process.argv[2]!, "utf8")) as WebhookPolicy;
  // Written synchronously: the test reads these lines while the process runs (a pipe's console.log is buffered).
  const say = (line: string) => writeSync(1, `${line}\n`);
  const running = await startWebhookServer(policy, say);
  say(`listening ${running.port}`);
}
