// Pods, ConfigMaps and Secrets pushed over HTTP (the 2014 debugging handlers and a modern REST shape),
// merged as source "http".
import { Hono, type Context } from "hono";
import { DEFAULT_MAX_MANIFEST_BYTES } from "../api/manifest-text.ts";
import { readManifests } from "../api/manifest.ts";
import { httpError } from "./server-support.ts";
import { formatIssue, type Pod, type PodOperation, type RejectedPod } from "../api/types.ts";
import { validatePod, type ValidationOptions } from "../api/validation.ts";
import { applyManifestStrictness } from "../api/manifest-strict.ts";
import { describeConfig, validateConfigObject, type ConfigKind, type ConfigObject } from "../api/config-objects.ts";

export interface PushTarget {
  merge(source: "http", op: PodOperation, pods: Pod[], rejected?: RejectedPod[]): void;
  mergeConfigs(source: "http", op: PodOperation, objects: ConfigObject[]): void;
}

export interface PushOptions extends ValidationOptions {
  /** --strict_manifests: a pushed pod with an unknown field is refused (default false here: warned and ignored). */
  strictManifests?: boolean;
  /** Largest body, bytes (--max_manifest_bytes). */
  maxBytes?: number;
  /** How long a client may take to send its body, ms; a slowloris client is cut off with 408. */
  bodyTimeoutMs?: number;
}

/** Media types a manifest may be sent as; curl -d sends form-urlencoded, test clients text/plain. */
const MANIFEST_TYPES = new Set([
  "application/json",
  "application/yaml",
  "application/x-yaml",
  "text/yaml",
  "text/x-yaml",
  "text/plain",
  "application/x-www-form-urlencoded",
]);

/** Parses and validates a pushed body; any error rejects the whole request with every cause. */
function parseBody(
  body: Uint8Array,
  origin: string,
  options: PushOptions,
  expect: "one" | "many",
): { pods: Pod[]; configs: ConfigObject[] } {
  const { pods, rejected, configs } = readManifests(body, { source: "http", origin }, { maxBytes: options.maxBytes });
  const causes = rejected.flatMap((r) =>
    r.issues.map((i) => ({ field: i.path, message: `${origin}[${r.document ?? 0}]: ${formatIssue(i)}` })),
  );
  for (const pod of pods) {
    const issues = applyManifestStrictness(validatePod(pod, options), options.strictManifests ?? false);
    for (const issue of issues.filter((i) => i.severity === "error")) {
      causes.push({
        field: issue.path,
        message: `${pod.metadata.namespace}/${pod.metadata.name}: ${formatIssue(issue)}`,
      });
    }
  }
  for (const object of configs) {
    for (const issue of validateConfigObject(object).filter((i) => i.severity === "error")) {
      causes.push({ field: issue.path, message: `${describeConfig(object)}: ${formatIssue(issue)}` });
    }
  }
  if (causes.length) throw httpError(400, `invalid pod manifest: ${causes.map((c) => c.message).join("; ")}`, causes);
  if (expect === "one" && pods.length !== 1) throw httpError(400, `expected exactly one pod, got ${pods.length}`);
  return { pods, configs };
}

/** The request body, refused past `maxBytes` (413), past the deadline (408) or of a foreign media type (415). */
async function readBody(c: Context, maxBytes: number, timeoutMs: number): Promise<Uint8Array> {
  const type = (c.req.header("content-type") ?? "").split(";")[0]!.trim().toLowerCase();
  if (type && !MANIFEST_TYPES.has(type))
    throw httpError(415, `unsupported media type "${type}": send the manifest as application/json or application/yaml`);
  const declared = Number(c.req.header("content-length") ?? 0);
  if (declared > maxBytes) throw httpError(413, `request body is larger than ${maxBytes} bytes`);
  const reader = c.req.raw.body?.getReader();
  if (!reader) return new Uint8Array();
  const chunks: Uint8Array[] = [];
  let size = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(httpError(408, `request body not received within ${timeoutMs / 1000}s`)),
      timeoutMs,
    );
  });
  try {
    for (;;) {
      const { done, value } = await Promise.race([reader.read(), deadline]);
      if (done) break;
      size += value.byteLength;
      if (size > maxBytes) throw httpError(413, `request body is larger than ${maxBytes} bytes`);
      chunks.push(value);
    }
  } catch (error) {
    void reader.cancel().catch(() => {});
    throw error;
  } finally {
    clearTimeout(timer);
  }
  return Buffer.concat(chunks);
}

export function createPushRoutes(target: PushTarget, options: PushOptions): Hono {
  const app = new Hono();
  const maxBytes = options.maxBytes ?? DEFAULT_MAX_MANIFEST_BYTES;
  const pushed = async (c: Context, expect: "one" | "many") =>
    parseBody(
      await readBody(c, maxBytes, options.bodyTimeoutMs ?? 30_000),
      `${c.req.method} ${c.req.path}`,
      options,
      expect,
    );
  const accepted = (pods: Pod[], configs: ConfigObject[]) => ({
    kind: "Status",
    apiVersion: "v1",
    status: "Success",
    message: `accepted ${pods.length} pod(s)${configs.length ? ` and ${configs.length} ConfigMap(s)/Secret(s)` : ""}`,
    code: 200,
  });
  // The 2014 routes and PUT /pods all replace the pushed set.
  for (const [method, path, expect] of [
    ["post", "/container", "one"],
    ["post", "/containers", "many"],
    ["put", "/pods", "many"],
  ] as const) {
    app[method](path, async (c) => {
      const { pods, configs } = await pushed(c, expect);
      target.mergeConfigs("http", "SET", configs);
      target.merge("http", "SET", pods);
      return c.json(accepted(pods, configs));
    });
  }
  app.post("/pods", async (c) => {
    const { pods, configs } = await pushed(c, "one");
    target.mergeConfigs("http", "ADD", configs);
    target.merge("http", "ADD", pods);
    return c.json(accepted(pods, configs), 201);
  });
  for (const [path, kind] of [
    ["configmaps", "ConfigMap"],
    ["secrets", "Secret"],
  ] as const) {
    app.delete(`/${path}/:namespace/:name`, (c) => {
      const { namespace, name } = c.req.param();
      const stub: ConfigObject = {
        apiVersion: "v1",
        kind: kind as ConfigKind,
        metadata: { namespace, name, annotations: {} },
      };
      target.mergeConfigs("http", "REMOVE", [stub]);
      return c.json({
        kind: "Status",
        apiVersion: "v1",
        status: "Success",
        message: `${kind} ${namespace}/${name} removed from the pushed set`,
        code: 200,
      });
    });
  }
  app.delete("/pods/:namespace/:name", (c) => {
    const { namespace, name } = c.req.param();
    const stub = {
      metadata: { namespace, name, uid: "", annotations: {} },
      spec: { containers: [] },
    } as unknown as Pod;
    target.merge("http", "REMOVE", [stub]);
    return c.json({
      kind: "Status",
      apiVersion: "v1",
      status: "Success",
      message: `pod ${namespace}/${name} removed from the pushed set`,
      code: 200,
    });
  });
  return app;
}
