// The node's own CLI as a client of its API (`kubelet logs`, `exec`, `port-forward`): over https the connection
// localConnection finds (the serving certificate verified against its CA, by the name it holds, before the token is
// sent), over plain http the configured address; the admin token as the credential, as `kubelet kubeconfig` hands kubectl.
import { readFileSync } from "node:fs";
import type { KubeletConfig } from "../config/config-types.ts";
import { adminTokenPath } from "../server/authn/admin-token.ts";
import { type ApiConnection, localConnection } from "./api-client.ts";

/** A request to the local kubelet's API. */
export interface StreamClient {
  /** The URL of `path` on the local kubelet. */
  url(path: string): string;
  fetch(path: string, init?: RequestInit): Promise<Response>;
  /** A WebSocket to `path` offering `protocols`, with the credential (Bun's client takes headers and TLS options). */
  webSocket(path: string, protocols: string[]): WebSocket;
}

export interface StreamClientDeps {
  fetch?: typeof fetch;
  readToken?: (path: string) => string;
  /** The https connection (tests hand in their own). */
  connect?: typeof localConnection;
}

/**
 * The local kubelet of `config`, its serving certificate verified against `certificateAuthority` when given (an
 * operator's certificate signed by a CA); rejects, naming the file and the fix, when the admin token or the
 * certificate cannot be read.
 */
export async function createStreamClient(
  config: KubeletConfig,
  options: { certificateAuthority?: string } = {},
  deps: StreamClientDeps = {},
): Promise<StreamClient> {
  const https = Boolean(config.tlsCertFile || config.clientCaFile);
  const { base, token, tls } = https
    ? tlsTarget(await (deps.connect ?? localConnection)(config, options))
    : plainTarget(config, deps);
  const send = deps.fetch ?? fetch;
  const Socket = globalThis.WebSocket as unknown as new (url: string, options: object) => WebSocket;
  return {
    url: (p) => base + p,
    fetch: (p, init = {}) =>
      send(base + p, {
        ...init,
        headers: { ...(init.headers as Record<string, string>), authorization: `Bearer ${token}` },
        ...(tls ? { tls } : {}),
      } as RequestInit),
    webSocket: (p, protocols) =>
      new Socket(base.replace(/^http/, "ws") + p, {
        protocols,
        headers: { authorization: `Bearer ${token}` },
        ...(tls ? { tls } : {}),
      }),
  };
}

interface Target {
  base: string;
  token: string;
  /** Bun's TLS options for fetch and WebSocket: the CA to trust and the name to verify the certificate by. */
  tls?: { ca?: string; serverName?: string };
}

function tlsTarget(connection: ApiConnection): Target {
  return {
    base: connection.server,
    token: connection.token,
    tls: {
      ...(connection.ca ? { ca: connection.ca } : {}),
      ...(connection.tlsServerName ? { serverName: connection.tlsServerName } : {}),
    },
  };
}

/** A kubelet without TLS: its configured address (loopback when it listens on every address), the token read here. */
function plainTarget(config: KubeletConfig, deps: StreamClientDeps): Target {
  const path = adminTokenPath(config);
  let token: string;
  try {
    token = (deps.readToken ?? ((p) => readFileSync(p, "utf8")))(path).trim();
  } catch (error) {
    throw new Error(
      `cannot read the admin token "${path}": ${(error as NodeJS.ErrnoException).code === "EACCES" ? "permission denied (it is readable by root only): run this as root, e.g. with sudo" : (error as Error).message}`,
    );
  }
  const host =
    config.address === "0.0.0.0" || config.address === "::" || !config.address ? "127.0.0.1" : config.address;
  return { base: `http://${host.includes(":") ? `[${host}]` : host}:${config.port}`, token };
}
