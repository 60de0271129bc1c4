// The Kubernetes API slice this node serves, as one Hono app the info server mounts: discovery and /version over
// every ServedGroupVersion the resource modules export, the pods resource (list, get, watch, writes to the push
// source), and the other modules' routes handed in. Errors thrown as API Statuses are answered as such.
import { Hono } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { buildInfo } from "../../build-info.ts";
import type { Clock } from "../../clock.ts";
import type { Pod } from "../../api/types.ts";
import type { ValidationOptions } from "../../api/validation.ts";
import type { PushTarget } from "../push-routes.ts";
import type { ServedGroupVersion } from "./api-resource.ts";
import { statusFor } from "./api-status.ts";
import { legacyWatchURL } from "./legacy-watch.ts";
import { createDiscoveryRoutes, type VersionInfo } from "./discovery.ts";
import { createPodRoutes, POD_RESOURCES } from "./pods.ts";
import { createPodCache, type PodCache, type PodFeed } from "./watch.ts";

/** The pods' entry in discovery. */
export const PODS_SERVED: ServedGroupVersion = { groupVersion: "v1", resources: POD_RESOURCES };

/** The Kubernetes minor release whose API behaviour this slice follows (what /version reports). */
export const KUBERNETES_MINOR = 32;

/** /version: the Kubernetes release mirrored, with this build's version and commit after it. */
export function versionInfo(platform = `${process.platform}/${process.arch}`): VersionInfo {
  const { version, commit } = buildInfo();
  return {
    major: "1",
    minor: String(KUBERNETES_MINOR),
    gitVersion: `v1.${KUBERNETES_MINOR}.0+kubelet-${version}`,
    gitCommit: commit,
    gitTreeState: "clean",
    buildDate: "",
    goVersion: "",
    compiler: "bun",
    platform,
  };
}

export interface ApiServerDeps {
  /** The pods as /pods serves them, with their version and change notifications. */
  pods: PodFeed;
  push: PushTarget;
  clock: Clock;
  validation: ValidationOptions & { strictManifests?: boolean };
  maxBytes: number;
  /** Why the API may not change a pod (default: it changes only pods pushed over HTTP). */
  refuseEdit?: (pod: Pod) => string | undefined;
}

export interface ApiServer {
  app: Hono;
  cache: PodCache;
  /** Stops listening to the pods' changes. */
  close(): void;
}

/** The API app: discovery over PODS_SERVED and `served`, the pods routes, then `extraRoutes` (other modules'). */
export function createApiServer(
  deps: ApiServerDeps,
  served: ServedGroupVersion[] = [],
  extraRoutes: Hono[] = [],
): ApiServer {
  const app = new Hono();
  // Hono answers a mounted app's errors with its own handler, so this one answers as the info server's does.
  app.onError((error, c) => {
    const answer = statusFor(error);
    return c.json(answer, answer.code as ContentfulStatusCode);
  });
  const cache = createPodCache(deps.pods, { clock: deps.clock });
  // The deprecated /watch/ prefix: answered by the collection's own `?watch=true` route, whichever module serves it.
  for (const prefix of ["/api/:version/watch/*", "/apis/:group/:version/watch/*"])
    app.get(prefix, (c, next) => {
      const url = legacyWatchURL(new URL(c.req.url));
      if (!url) return next();
      return app.fetch(new Request(url, { headers: c.req.raw.headers, signal: c.req.raw.signal }), c.env);
    });
  app.route("/", createDiscoveryRoutes([PODS_SERVED, ...served], versionInfo()));
  app.route(
    "/",
    createPodRoutes({
      cache,
      push: deps.push,
      clock: deps.clock,
      validation: deps.validation,
      maxBytes: deps.maxBytes,
      ...(deps.refuseEdit ? { refuseEdit: deps.refuseEdit } : {}),
    }),
  );
  for (const routes of extraRoutes) app.route("/", routes);
  return { app, cache, close: () => cache.close() };
}
