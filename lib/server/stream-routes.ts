// The streaming debugging routes: GET /exec/{namespace}/{pod}/{container} and /attach/…, WebSocket
// upgrades speaking the channel protocol (v5/v4.channel.k8s.io), with the Go kubelet's query
// parameters: command (repeated), input, output, error, tty. Mounted behind the info server's guard.
import { Hono, type Context } from "hono";
import { CHANNEL_PROTOCOLS, negotiateProtocol } from "../container/channel-protocol.ts";
import { streamFlags, type Runtime, type StreamOptions, type StreamSession } from "../container/runtime.ts";
import type { Pod } from "../api/types.ts";
import type { Logger } from "../log.ts";
import { upgradeToWebSocket } from "../platform/websocket.ts";
import { bridgeStream } from "./stream-bridge.ts";
import { httpError, pickContainer, status } from "./server-support.ts";

export interface StreamRouteDeps {
  runtime: Runtime;
  /** Desired pods: attach takes the container's tty from its spec, as the Go kubelet does. */
  pods(): Pod[];
  log?: Logger;
}

/** The Go kubelet's flags: "1" means yes (and "true", which people type). */
function yes(c: Context, name: string): boolean {
  const value = c.req.query(name);
  return value === "1" || value === "true";
}

/** input/output/error/tty of the query; a TTY carries no separate stderr. At least one stream is required. */
function streamOptions(c: Context, tty: boolean): StreamOptions {
  const options = streamFlags({ stdin: yes(c, "input"), stdout: yes(c, "output"), stderr: yes(c, "error"), tty });
  if (!options.stdin && !options.stdout && !options.stderr)
    throw httpError(400, "you must specify at least 1 of stdin, stdout, stderr: give input=1, output=1 or error=1");
  return options;
}

/** The agreed subprotocol of a WebSocket upgrade request; 400 naming what is served otherwise. */
function webSocketProtocol(c: Context): string {
  const upgrade = c.req.header("upgrade");
  if (upgrade?.toLowerCase() !== "websocket")
    throw httpError(
      400,
      `${c.req.path} is served over WebSocket only: send Upgrade: websocket with Sec-WebSocket-Protocol ${CHANNEL_PROTOCOLS.join(" or ")}${upgrade ? ` (this request asked to upgrade to "${upgrade}"; SPDY is not served)` : ""}`,
    );
  if (!c.req.header("sec-websocket-key") || c.req.header("sec-websocket-version") !== "13")
    throw httpError(400, "malformed WebSocket upgrade: it needs Sec-WebSocket-Key and Sec-WebSocket-Version: 13");
  const protocol = negotiateProtocol(c.req.header("sec-websocket-protocol") ?? null);
  if (!protocol)
    throw httpError(
      400,
      `none of the requested subprotocols [${c.req.header("sec-websocket-protocol") ?? ""}] is supported: use ${CHANNEL_PROTOCOLS.join(" or ")}`,
    );
  return protocol;
}

/** Why a platform could not upgrade: what node and deno users see instead of a stream. */
const notUpgradable = () =>
  new Response(
    JSON.stringify(
      status(
        501,
        "NotImplemented",
        "exec and attach streams need a WebSocket server, which this kubelet lacks when it serves through node:http (under node and deno): run the compiled binary",
      ),
    ),
    { status: 501, headers: { "content-type": "application/json" } },
  );

export function createStreamRoutes(deps: StreamRouteDeps): Hono {
  const app = new Hono();

  const stream = async (
    c: Context,
    options: StreamOptions,
    what: (id: string) => { action: string; open(): Promise<StreamSession> },
  ) => {
    const protocol = webSocketProtocol(c);
    const { namespace, pod, container } = c.req.param() as Record<"namespace" | "pod" | "container", string>;
    const chosen = await pickContainer(deps.runtime, namespace, pod, container);
    if (chosen.state !== "CONTAINER_RUNNING")
      throw httpError(
        400,
        `container "${container}" in pod "${pod}" in namespace "${namespace}" is not running (${chosen.state})`,
      );
    const { action, open } = what(chosen.id);
    deps.log?.debug(`${c.req.path}: ${action}`);
    return upgradeToWebSocket(
      notUpgradable(),
      bridgeStream({ protocol, streams: options, open, action, log: deps.log }),
    );
  };

  app.get("/exec/:namespace/:pod/:container", (c) => {
    const cmd = c.req.queries("command") ?? [];
    if (cmd.length === 0) throw httpError(400, "missing command: give ?command=…&command=… (one per argument)");
    const options = streamOptions(c, yes(c, "tty"));
    return stream(c, options, (id) => ({
      action: `exec ${JSON.stringify(cmd)} in container ${id.slice(0, 12)}`,
      open: () => deps.runtime.execStream(id, cmd, options),
    }));
  });
  app.get("/attach/:namespace/:pod/:container", (c) => {
    const { namespace, pod, container } = c.req.param();
    const spec = deps
      .pods()
      .find((p) => p.metadata.namespace === namespace && p.metadata.name === pod)
      ?.spec.containers.find((x) => x.name === container);
    // A TTY cannot be added to a process already running: attach uses the one the container was started with.
    const options = streamOptions(c, spec?.tty ?? false);
    return stream(c, options, (id) => ({
      action: `attach to container ${id.slice(0, 12)}`,
      open: () => deps.runtime.attach(id, options),
    }));
  });
  return app;
}
