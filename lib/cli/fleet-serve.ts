// `kubelet fleet serve`: the Kubernetes API slice a node serves, for the whole fleet, read from etcd alone: the
// pods every node reports (createApiServer over an etcd-backed feed), the nodes with Ready from their leases,
// logs, exec, attach and port-forward proxied to the pod's node, and pod writes as placements. Over TLS, authenticated and authorized
// as a node's API is. Holds nothing etcd does not: several can serve one fleet behind a load balancer.
import { readFile } from "node:fs/promises";
import { Hono, type Context } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { DEFAULT_MAX_MANIFEST_BYTES } from "../api/manifest-text.ts";
import { systemClock } from "../clock.ts";
import { DEFAULT_CONFIG } from "../config/config-types.ts";
import { serve } from "../platform/serve.ts";
import { forbiddenRequest, statusFor } from "../server/apiserver/api-status.ts";
import { createApiServer } from "../server/apiserver/apiserver.ts";
import { createFleetEventRoutes, FLEET_EVENT_RESOURCES } from "../server/apiserver/fleet-events.ts";
import { createFleetNodeRoutes } from "../server/apiserver/fleet-nodes.ts";
import { createFleetPodList } from "../server/apiserver/fleet-pod-list.ts";
import { createFleetPodFeed, FLEET_PLACED } from "../server/apiserver/fleet-pods.ts";
import { createFleetProxyRoutes, type KubeletClientCredentials } from "../server/apiserver/fleet-proxy.ts";
import { NODE_RESOURCES } from "../server/apiserver/nodes.ts";
import { ANONYMOUS } from "../server/authorizer.ts";
import { loadAuthenticator, type Authenticator } from "../server/auth.ts";
import { status } from "../server/server-support.ts";
import type { EtcdClient } from "../sources/etcd-client.ts";
import type { FleetServeSettings } from "./fleet-serve-flags.ts";
import { createFleetPlacements } from "./fleet-serve-placements.ts";

export interface FleetServer {
  port: number;
  stop(): Promise<void>;
}

async function credentials(settings: FleetServeSettings): Promise<KubeletClientCredentials> {
  const read = async (flag: string, path: string) => {
    if (!path) return undefined;
    try {
      return await readFile(path, "utf8");
    } catch (error) {
      throw new Error(`cannot read --${flag} "${path}": ${(error as Error).message}`);
    }
  };
  return {
    ca: await read("kubelet-certificate-authority", settings.kubeletCertificateAuthority),
    cert: await read("kubelet-client-certificate", settings.kubeletClientCertificate),
    key: await read("kubelet-client-key", settings.kubeletClientKey),
    token: (await read("kubelet-token-file", settings.kubeletTokenFile))?.trim(),
  };
}

/** Every request authenticated, then authorized on its attributes, as the node's main port does. */
function guard(auth: Authenticator) {
  return async (c: Context, next: () => Promise<void>) => {
    const user = await auth.authenticate(c.req.raw);
    if (user === "unauthenticated" || (user === ANONYMOUS && !auth.anonymous))
      return c.json(status(401, "Unauthorized", "Unauthorized"), 401);
    const decision = await auth.authorize(user, c.req.method, c.req.path, new URL(c.req.url).searchParams);
    if (decision.refusal?.status === 403) return c.json(forbiddenRequest(decision.attributes), 403);
    if (decision.refusal) return c.text(decision.refusal.message, decision.refusal.status);
    await next();
  };
}

/** Starts serving; resolves once listening. */
export async function startFleetServer(client: EtcdClient, settings: FleetServeSettings): Promise<FleetServer> {
  const auth = await loadAuthenticator(
    {
      ...DEFAULT_CONFIG,
      authTokenFile: settings.tokenAuthFile,
      tlsCertFile: settings.tlsCertFile,
      tlsPrivateKeyFile: settings.tlsPrivateKeyFile,
      clientCaFile: settings.clientCaFile,
      anonymousAuth: settings.anonymous,
      authorizationMode: settings.authorizationMode,
      authorizationPolicyFile: settings.authorizationPolicyFile,
    },
    { nodeName: "fleet" },
  );
  const feed = createFleetPodFeed(client, { clock: systemClock });
  await feed.start();
  const api = createApiServer(
    {
      pods: feed,
      push: createFleetPlacements(client),
      clock: systemClock,
      validation: { allowPrivileged: settings.allowPrivileged, trustedSources: [] },
      maxBytes: DEFAULT_MAX_MANIFEST_BYTES,
      refuseEdit: (pod) =>
        pod.metadata.annotations?.[FLEET_PLACED] === undefined
          ? `pod ${pod.metadata.namespace}/${pod.metadata.name} runs from node ${pod.spec.nodeName}'s own manifests (its files, URL or HTTP pushes), not a placement in etcd: fleet serve changes only pods placed with kubelet fleet apply or through this API; change it on the node`
          : undefined,
    },
    [NODE_RESOURCES, FLEET_EVENT_RESOURCES],
  );
  const app = new Hono();
  // Errors of the routes mounted here are answered as the API's own handler answers its routes'.
  app.onError((error, c) => {
    const answer = statusFor(error);
    return c.json(answer, answer.code as ContentfulStatusCode);
  });
  app.use("*", guard(auth));
  // Nodes and the proxy before the pods: their errors are answered here, the pods' by the API's own handler.
  app.route("/", createFleetNodeRoutes({ client, clock: systemClock, graceMs: settings.nodeMonitorGracePeriodMs }));
  app.route("/", createFleetEventRoutes({ client, clock: systemClock }));
  app.route(
    "/",
    createFleetProxyRoutes({
      cache: api.cache,
      client,
      credentials: await credentials(settings),
      addressOverride: settings.kubeletAddressOverride || undefined,
    }),
  );
  // The pods list in pages from kept snapshots; watches and everything else go on to the API's pod routes.
  const podList = createFleetPodList({ cache: api.cache, clock: systemClock, maxUnpaged: settings.maxUnpagedList });
  app.route("/", podList.app);
  app.route("/", api.app);
  // Decision: the pod cache, the sorted snapshot and the rows are built before listening, not by the first list
  // (a 30,000-pod fleet's first `kubectl get pods -A` paid ~0.7 s more than later ones, bench/results.md). Only at
  // start: warming after every change would spend the CPU of a list each time a node reports, listed or not.
  podList.warm();
  const server = await serve(app, { hostname: settings.address, port: settings.port, tls: auth.tls });
  return {
    port: server.port,
    async stop() {
      await server.stop();
      api.close();
      auth.stop();
      await feed.stop();
    },
  };
}

/** Serves until the signal aborts; resolves to the exit code. */
export async function fleetServe(
  client: EtcdClient,
  settings: FleetServeSettings,
  io: { out: NodeJS.WritableStream; signal: AbortSignal },
): Promise<number> {
  const server = await startFleetServer(client, settings);
  io.out.write(`kubelet fleet serve: the fleet's API on https://${settings.address}:${server.port}\n`);
  await new Promise<void>((resolve) => {
    if (io.signal.aborted) return resolve();
    io.signal.addEventListener("abort", () => resolve(), { once: true });
  });
  await server.stop();
  return 0;
}
