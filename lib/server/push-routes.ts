// Pods pushed over HTTP (the 2014 debugging handlers and a modern REST shape), merged as source "http".
import { Hono } from "hono";
import { bodyLimit } from "hono/body-limit";
import { readManifests } from "../api/manifest.ts";
import { httpError } from "./server-support.ts";
import { formatIssue, type Pod, type PodOperation, type RejectedPod } from "../api/types.ts";
import { validatePod } from "../api/validation.ts";

export interface PushTarget {
  merge(source: "http", op: PodOperation, pods: Pod[], rejected?: RejectedPod[]): void;
}

const MAX_BODY = 1024 * 1024;

/** Parses and validates a pushed body; any error rejects the whole request with every cause. */
function parseBody(text: string, allowPrivileged: boolean, expect: "one" | "many"): Pod[] {
  const { pods, rejected } = readManifests(text, { source: "http", origin: "http-push" });
  const causes = rejected.flatMap((r) => r.issues.map((i) => ({ field: i.path, message: formatIssue(i) })));
  for (const pod of pods) {
    for (const issue of validatePod(pod, { allowPrivileged }).filter((i) => i.severity === "error")) {
      causes.push({
        field: issue.path,
        message: `${pod.metadata.namespace}/${pod.metadata.name}: ${formatIssue(issue)}`,
      });
    }
  }
  if (causes.length) throw httpError(400, `invalid pod manifest: ${causes.map((c) => c.message).join("; ")}`, causes);
  if (expect === "one" && pods.length !== 1) throw httpError(400, `expected exactly one pod, got ${pods.length}`);
  return pods;
}

export function createPushRoutes(target: PushTarget, allowPrivileged: boolean): Hono {
  const app = new Hono();
  const limit = bodyLimit({
    maxSize: MAX_BODY,
    onError: () => {
      throw httpError(413, `request body is larger than ${MAX_BODY} bytes`);
    },
  });
  const accepted = (pods: Pod[]) => ({
    kind: "Status",
    apiVersion: "v1",
    status: "Success",
    message: `accepted ${pods.length} pod(s)`,
    code: 200,
  });
  // The 2014 routes and PUT /pods all replace the pushed set.
  for (const [method, path, expect] of [
    ["post", "/container", "one"],
    ["post", "/containers", "many"],
    ["put", "/pods", "many"],
  ] as const) {
    app[method](path, limit, async (c) => {
      const pods = parseBody(await c.req.text(), allowPrivileged, expect);
      target.merge("http", "SET", pods);
      return c.json(accepted(pods));
    });
  }
  app.post("/pods", limit, async (c) => {
    const pods = parseBody(await c.req.text(), allowPrivileged, "one");
    target.merge("http", "ADD", pods);
    return c.json(accepted(pods), 201);
  });
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
