// The client for the webhook server --kubeconfig names (TokenReview, SubjectAccessReview): its URL, CA, client
// certificate or bearer token read from the kubeconfig's current context, and a JSON POST over TLS.
import { request as httpsRequest } from "node:https";
import { request as httpRequest } from "node:http";
import { readFile } from "node:fs/promises";
import { dirname, isAbsolute, join } from "node:path";
import { parseYaml } from "../../api/manifest.ts";
import { KubeletError } from "../../api/types.ts";

/** Where the webhook server is and how to reach it. */
export interface WebhookTarget {
  server: string;
  ca?: string;
  cert?: string;
  key?: string;
  token?: string;
  insecureSkipTlsVerify?: boolean;
}

/** POSTs a JSON object to a path under the server and returns the decoded answer; throws when it cannot. */
export interface WebhookClient {
  readonly server: string;
  post(path: string, body: unknown): Promise<unknown>;
}

type Named<T> = { name?: string } & T;
interface Kubeconfig {
  "current-context"?: string;
  contexts?: Named<{ context?: { cluster?: string; user?: string } }>[];
  clusters?: Named<{ cluster?: Record<string, unknown> }>[];
  users?: Named<{ user?: Record<string, unknown> }>[];
}

/** Reads the current context's cluster and user from the kubeconfig at `path` (relative files beside it). */
export async function loadKubeconfig(path: string): Promise<WebhookTarget> {
  const fail = (why: string) => new KubeletError("InvalidConfig", `--kubeconfig "${path}": ${why}`);
  const text = await readFile(path, "utf8").catch((error: Error) => {
    throw fail(`cannot read it: ${error.message}`);
  });
  const doc = (parseYaml(text) ?? {}) as Kubeconfig;
  const contexts = doc.contexts ?? [];
  const context = (
    contexts.find((c) => c.name === doc["current-context"]) ?? (contexts.length === 1 ? contexts[0] : undefined)
  )?.context;
  const cluster = (context ? doc.clusters?.find((c) => c.name === context.cluster) : doc.clusters?.[0])?.cluster;
  const user = (context ? doc.users?.find((u) => u.name === context.user) : doc.users?.[0])?.user ?? {};
  if (!cluster || typeof cluster.server !== "string") throw fail("no cluster with a server for the current context");
  const file = async (inline: string, named: string, from: Record<string, unknown>) => {
    if (typeof from[inline] === "string") return Buffer.from(from[inline] as string, "base64").toString("utf8");
    if (typeof from[named] !== "string") return undefined;
    const target = from[named] as string;
    const resolved = isAbsolute(target) ? target : join(dirname(path), target);
    return readFile(resolved, "utf8").catch((error: Error) => {
      throw fail(`cannot read ${named} "${resolved}": ${error.message}`);
    });
  };
  const ca = await file("certificate-authority-data", "certificate-authority", cluster);
  const cert = await file("client-certificate-data", "client-certificate", user);
  const key = await file("client-key-data", "client-key", user);
  const token = typeof user.token === "string" ? user.token : await file("", "tokenFile", user).then((t) => t?.trim());
  return {
    server: cluster.server.replace(/\/$/, ""),
    ...(ca ? { ca } : {}),
    ...(cert ? { cert } : {}),
    ...(key ? { key } : {}),
    ...(token ? { token } : {}),
    ...(cluster["insecure-skip-tls-verify"] === true ? { insecureSkipTlsVerify: true } : {}),
  };
}

/** A client for `target`; each call gives up after `timeoutMs` (default 10 s). */
export function createWebhookClient(target: WebhookTarget, options: { timeoutMs?: number } = {}): WebhookClient {
  const url = new URL(target.server);
  const timeoutMs = options.timeoutMs ?? 10_000;
  return {
    server: target.server,
    post(path, body) {
      const payload = JSON.stringify(body);
      const send = url.protocol === "https:" ? httpsRequest : httpRequest;
      return new Promise((resolve, reject) => {
        const req = send(
          `${target.server}${path}`,
          {
            method: "POST",
            headers: {
              "content-type": "application/json",
              accept: "application/json",
              "content-length": Buffer.byteLength(payload),
              ...(target.token ? { authorization: `Bearer ${target.token}` } : {}),
            },
            ...(target.ca ? { ca: target.ca } : {}),
            ...(target.cert && target.key ? { cert: target.cert, key: target.key } : {}),
            rejectUnauthorized: !target.insecureSkipTlsVerify,
            timeout: timeoutMs,
          },
          (res) => {
            const chunks: Buffer[] = [];
            res.on("data", (chunk: Buffer) => chunks.push(chunk));
            res.on("error", reject);
            res.on("end", () => {
              const text = Buffer.concat(chunks).toString("utf8");
              if ((res.statusCode ?? 0) >= 300)
                return reject(new Error(`${path} answered ${res.statusCode}: ${text.slice(0, 200)}`));
              try {
                resolve(JSON.parse(text));
              } catch {
                reject(new Error(`${path} answered ${res.statusCode} with a body that is not JSON`));
              }
            });
          },
        );
        req.on("timeout", () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
        req.on("error", reject);
        req.end(payload);
      });
    },
  };
}
