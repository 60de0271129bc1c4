// Who may use the info server, as the Go kubelet authenticates: a bearer token (constant-time) or a
// TLS client certificate signed by --client_ca_file (requested, not required), else anonymous. A
// wrong token is refused on every route; anonymous callers are refused on every route of the main
// port when the configuration fails closed (anonymous off, or Webhook authorization), and on the
// write and debugging routes beyond loopback. The read-only port authenticates nobody.
import { createHash, timingSafeEqual } from "node:crypto";
import { readFile } from "node:fs/promises";
import type { KubeletConfig } from "../config/config-types.ts";
import { KubeletError } from "../api/types.ts";
import { hasClientCertificate } from "../platform/client-certificate.ts";
import type { TlsFiles } from "../platform/types.ts";

export interface Authenticator {
  /** Whether protected routes need credentials (beyond loopback, or when tokens are configured). */
  required: boolean;
  /** Whether anonymous callers may use the main port's read routes (false: every route needs credentials). */
  anonymous: boolean;
  tls?: TlsFiles;
  /** "ok" (a valid token or client certificate), "anonymous" (none given) or "unauthenticated" (a wrong token). */
  check(request: Request): "ok" | "anonymous" | "unauthenticated";
}

/** True for 127.0.0.0/8, ::1 and localhost. */
export function isLoopback(address: string): boolean {
  return address === "localhost" || address === "::1" || /^127\./.test(address);
}

/** The refusal message for a server that would expose exec and logs without authentication. */
export function checkServerSecurity(config: KubeletConfig): string | undefined {
  if (!config.enableServer || !config.enableDebuggingHandlers || isLoopback(config.address)) return undefined;
  if (config.authTokenFile || config.clientCaFile) return undefined;
  return `refusing to serve debugging handlers (exec, logs, pod pushes) on ${config.address} without authentication: give --auth_token_file or --client_ca_file (served with --tls_cert_file/--tls_private_key_file, or a self-signed certificate under --cert_dir), listen on 127.0.0.1, or set --enable_debugging_handlers=false`;
}

/** Whether the operator's file asked that no anonymous request reach the protected routes, on any address. */
export function failsClosed(config: KubeletConfig): boolean {
  return !config.anonymousAuth || config.authorizationMode === "Webhook";
}

/** What start-up says about the protected routes when the configuration closes them to anonymous callers. */
export function securityNotice(config: KubeletConfig): string | undefined {
  if (!config.enableServer || !failsClosed(config)) return undefined;
  const why = [
    ...(!config.anonymousAuth ? ["authentication.anonymous.enabled is false"] : []),
    ...(config.authorizationMode === "Webhook"
      ? ["authorization.mode is Webhook, which needs an API server (SubjectAccessReview); failing closed"]
      : []),
  ].join("; ");
  const means = [
    ...(config.authTokenFile ? [`a bearer token from --auth_token_file "${config.authTokenFile}"`] : []),
    ...(config.clientCaFile ? [`a client certificate signed by "${config.clientCaFile}"`] : []),
  ];
  const port = `every route of ${config.address}:${config.port}${config.tlsCertFile ? " (TLS)" : ""}`;
  const readOnly =
    config.readOnlyPort > 0
      ? `; the read-only port ${config.readOnlyPort} stays unauthenticated (GET routes only)`
      : "";
  return means.length
    ? `${why}: ${port} requires ${means.join(" or ")}${readOnly}`
    : `${why}: ${port} answers 401 to every request (no --auth_token_file and no client CA to authenticate against)${readOnly}`;
}

/** What start-up says about who may use the server when anonymous callers are let in (failsClosed: securityNotice). */
export function accessNotice(config: KubeletConfig): string | undefined {
  if (!config.enableServer || failsClosed(config)) return undefined;
  const means = [
    ...(config.authTokenFile ? ["a bearer token from --auth_token_file"] : []),
    ...(config.clientCaFile ? ["a client certificate signed by --client_ca_file"] : []),
  ];
  const debugging = !config.enableDebuggingHandlers
    ? "debugging handlers are off"
    : isLoopback(config.address) && means.length === 0
      ? "debugging and write routes are open to local callers (loopback)"
      : `debugging and write routes require ${means.join(" or ")}`;
  return `anonymous requests are allowed on ${config.address}:${config.port}: read routes answer anyone, a wrong token is refused; ${debugging}`;
}

const digest = (text: string) => createHash("sha256").update(text).digest();

export async function loadAuthenticator(config: KubeletConfig): Promise<Authenticator> {
  const read = async (flag: string, path: string) => {
    try {
      return await readFile(path, "utf8");
    } catch (error) {
      throw new KubeletError("InvalidConfig", `cannot read --${flag} "${path}": ${(error as Error).message}`);
    }
  };
  const tokens = config.authTokenFile
    ? (await read("auth_token_file", config.authTokenFile))
        .split("\n")
        .map((l) => l.trim())
        .filter((l) => l && !l.startsWith("#"))
        .map(digest)
    : [];
  if (config.authTokenFile && tokens.length === 0)
    throw new KubeletError("InvalidConfig", `--auth_token_file "${config.authTokenFile}" holds no token`);
  // The composition root fills in a self-signed pair (self-signed.ts) when none is given.
  if (config.clientCaFile && !(config.tlsCertFile && config.tlsPrivateKeyFile))
    throw new KubeletError(
      "InvalidConfig",
      "--client_ca_file needs a serving certificate: give --tls_cert_file and --tls_private_key_file (client certificates only exist over TLS)",
    );
  const tls =
    config.tlsCertFile && config.tlsPrivateKeyFile
      ? {
          cert: await read("tls_cert_file", config.tlsCertFile),
          key: await read("tls_private_key_file", config.tlsPrivateKeyFile),
          ...(config.clientCaFile ? { ca: await read("client_ca_file", config.clientCaFile) } : {}),
        }
      : undefined;
  return {
    required: !isLoopback(config.address) || tokens.length > 0 || failsClosed(config),
    anonymous: !failsClosed(config),
    tls,
    check(request) {
      const header = request.headers.get("authorization");
      if (header !== null) {
        // As the Go kubelet: a bad bearer token is an error, never anonymous.
        const match = /^Bearer\s+(.+)$/i.exec(header);
        if (!match) return "unauthenticated";
        const given = digest(match[1]!.trim());
        return tokens.some((token) => timingSafeEqual(token, given)) ? "ok" : "unauthenticated";
      }
      return tls?.ca && hasClientCertificate(request) ? "ok" : "anonymous";
    },
  };
}
