// The node's own CLI as a client of its API (`kubelet logs`): the local kubelet's address from the configuration
// (https when it serves TLS), and the admin token as the credential, as `kubelet kubeconfig` hands kubectl.
import { readFileSync } from "node:fs";
import type { KubeletConfig } from "../config/config-types.ts";
import { adminTokenPath } from "../server/authn/admin-token.ts";

/** A request to the local kubelet's API. */
export interface StreamClient {
  /** The URL of `path` on the local kubelet. */
  url(path: string): string;
  fetch(path: string, init?: RequestInit): Promise<Response>;
  /** A WebSocket to `path` offering `protocols`, with the credential (Bun's client takes headers and TLS options). */
  webSocket(path: string, protocols: string[]): WebSocket;
}

/** The local kubelet of `config`; throws, naming the file and the fix, when the admin token cannot be read. */
export function createStreamClient(
  config: Pick<KubeletConfig, "address" | "port" | "tlsCertFile" | "clientCaFile" | "adminTokenFile" | "rootDir">,
  deps: { fetch?: typeof fetch; readToken?: (path: string) => string } = {},
): StreamClient {
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
  const tls = Boolean(config.tlsCertFile || config.clientCaFile);
  const base = `${tls ? "https" : "http"}://${host.includes(":") ? `[${host}]` : host}:${config.port}`;
  const send = deps.fetch ?? fetch;
  const Socket = globalThis.WebSocket as unknown as new (url: string, options: object) => WebSocket;
  return {
    url: (p) => base + p,
    // The kubelet's own serving certificate is not checked: the request goes to this node's configured address,
    // and a certificate the operator had signed by a CA would need that CA here (kubectl with `kubelet kubeconfig` checks it).
    fetch: (p, init = {}) =>
      send(base + p, {
        ...init,
        headers: { ...(init.headers as Record<string, string>), authorization: `Bearer ${token}` },
        ...(tls ? { tls: { rejectUnauthorized: false } } : {}),
      } as RequestInit),
    webSocket: (p, protocols) =>
      new Socket(base.replace(/^http/, "ws") + p, {
        protocols,
        headers: { authorization: `Bearer ${token}` },
        ...(tls ? { tls: { rejectUnauthorized: false } } : {}),
      }),
  };
}
