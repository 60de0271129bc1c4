// Pods, ConfigMaps and Secrets pushed over HTTP (the 2014 debugging handlers and a modern REST shape),
// merged as source "http".
import { Hono } from "hono";
import { bodyLimit } from "hono/body-limit";
import { readManifests } from "../api/manifest.ts";
import { httpError } from "./server-support.ts";
import { formatIssue, type Pod, type PodOperation, type RejectedPod } from "../api/types.ts";
import { validatePod } from "../api/validation.ts";
import { describeConfig, validateConfigObject, type ConfigKind, type ConfigObject } from "../api/config-objects.ts";

export interface PushTarget {
  merge(source: "http", op: PodOperation, pods: Pod[], rejected?: RejectedPod[]): void;
  mergeConfigs(source: "http", op: PodOperation, objects: ConfigObject[]): void;
}

const MAX_BODY = 1024 * 1024;

/** Parses and validates a pushed body; any error rejects the whole request with every cause. */
function parseBody(
  text: string,
  allowPrivileged: boolean,
  expect: "one" | "many",
): { pods: Pod[]; configs: ConfigObject[] } {
  const { pods, rejected, configs } = readManifests(text, { source: "http", origin: "http-push" });
  const causes = rejected.flatMap((r) => r.issues.map((i) => ({ field: i.path, message: formatIssue(i) })));
  for (const pod of pods) {
    for (const issue of validatePod(pod, { allowPrivileged }).filter((i) => i.severity === "error")) {
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

export function createPushRoutes(target: PushTarget, allowPrivileged: boolean): Hono {
  const app = new Hono();
  const limit = bodyLimit({
    maxSize: MAX_BODY,
    onError: () => {
      throw httpError(413, `request body is larger than ${MAX_BODY} bytes`);
    },
  });
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
    app[method](path, limit, async (c) => {
      const { pods, configs } = parseBody(await c.req.text(), allowPrivileged, expect);
      target.mergeConfigs("http", "SET", configs);
      target.merge("http", "SET", pods);
      return c.json(accepted(pods, configs));
    });
  }
  app.post("/pods", limit, async (c) => {
    const { pods, configs } = parseBody(await c.req.text(), allowPrivileged, "one");
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
