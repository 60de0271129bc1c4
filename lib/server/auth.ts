// Who may use the info server, as the Go kubelet authenticates and authorizes: a bearer token (the token file,
// the admin token, or a TokenReview), a TLS client certificate signed by --client_ca_file (user CN, groups O),
// else anonymous; then each request's attributes (authn/request-attributes.ts) are checked by the authorization
// mode. A wrong token is refused on every route; anonymous callers are refused on every route of the main port
// when anonymous authentication is off, and on the debugging and write routes under AlwaysAllow, on loopback
// too: local administration uses the admin token. The read-only port authenticates nobody.
import { createHash, timingSafeEqual } from "node:crypto";
import { readFile } from "node:fs/promises";
import { hostname } from "node:os";
import type { KubeletConfig } from "../config/config-types.ts";
import { KubeletError } from "../api/types.ts";
import { systemClock, type Clock } from "../clock.ts";
import type { Logger } from "../log.ts";
import { clientCertificateSubject } from "../platform/client-certificate.ts";
import type { TlsFiles } from "../platform/types.ts";
import {
  ANONYMOUS,
  type AuthorizationResult,
  type Authorizer,
  type RequestAttributes,
  type UserInfo,
} from "./authorizer.ts";
import { createAuthorizer, type RbacFactory } from "./authn/authorizers.ts";
import { requestAttributes } from "./authn/request-attributes.ts";
import { parseTokenFile, withAuthenticated, type StaticToken } from "./authn/token-file.ts";
import { createTokenReviewer, type TokenReviewer } from "./authn/token-review.ts";
import { createWebhookClient, loadKubeconfig, type WebhookClient } from "./authn/webhook-client.ts";

/** Who the caller is: a user, ANONYMOUS (no credentials given) or "unauthenticated" (credentials that fail). */
export type Authentication = UserInfo | "unauthenticated";

/** The outcome of authorizing one request: the attributes last checked and the decision, or the webhook's error. */
export interface RequestDecision {
  attributes: RequestAttributes;
  result: AuthorizationResult;
  /** The Go kubelet's 403 or 500 body when not allowed. */
  refusal?: { status: 403 | 500; message: string };
}

export interface Authenticator {
  /** Whether anonymous callers may use the main port (authentication.anonymous.enabled). */
  anonymous: boolean;
  /** Whether the authorization mode, not the server, decides what anonymous callers may do on debugging routes. */
  anonymousDebugging: boolean;
  tls?: TlsFiles;
  authenticate(request: Request): Promise<Authentication>;
  /** `query` matters on the API's paths only (watch=true, fieldSelector: see apiserver/request-info.ts). */
  authorize(user: UserInfo, method: string, path: string, query?: URLSearchParams): Promise<RequestDecision>;
  stop(): void;
}

/** The group the API server lets do anything (user.SystemPrivilegedGroup); the admin token's. */
export const PRIVILEGED_GROUP = "system:masters";

/** True for 127.0.0.0/8, ::1 and localhost. */
export function isLoopback(address: string): boolean {
  return address === "localhost" || address === "::1" || /^127\./.test(address);
}

/** The refusal message for a server that would expose exec and logs beyond loopback with only the local admin token. */
export function checkServerSecurity(config: KubeletConfig): string | undefined {
  if (!config.enableServer || !config.enableDebuggingHandlers || isLoopback(config.address)) return undefined;
  if (config.authTokenFile || config.clientCaFile || config.authenticationTokenWebhook) return undefined;
  return `refusing to serve debugging handlers (exec, logs, pod pushes) on ${config.address} without authentication: give --auth_token_file or --client_ca_file (served with --tls_cert_file/--tls_private_key_file, or a self-signed certificate under --cert_dir), listen on 127.0.0.1, or set --enable_debugging_handlers=false`;
}

/** Whether the operator's file asked that no anonymous request reach any route of the main port. */
export function failsClosed(config: KubeletConfig): boolean {
  return !config.anonymousAuth;
}

/** The ways a caller can authenticate under `config`, for start-up's notices. */
function credentials(config: KubeletConfig, adminToken?: string): string[] {
  return [
    ...(config.authTokenFile ? [`a bearer token from --auth_token_file "${config.authTokenFile}"`] : []),
    ...(config.authenticationTokenWebhook ? [`a bearer token the --kubeconfig server accepts (TokenReview)`] : []),
    ...(config.clientCaFile ? [`a client certificate signed by "${config.clientCaFile}"`] : []),
    ...(adminToken ? [`the admin token "${adminToken}"`] : []),
  ];
}

/** What start-up says when a webhook is configured without --kubeconfig: it fails closed. */
export function webhookNotice(config: KubeletConfig): string | undefined {
  if (!config.enableServer || config.kubeconfig) return undefined;
  const missing = [
    ...(config.authorizationMode === "Webhook"
      ? ["authorization.mode is Webhook: every request but the admin token's (system:masters) is refused"]
      : []),
    ...(config.authenticationTokenWebhook
      ? ["authentication.webhook.enabled: tokens not in a token file are refused"]
      : []),
  ];
  return missing.length
    ? `no --kubeconfig names a server for SubjectAccessReview/TokenReview, failing closed: ${missing.join("; ")}`
    : undefined;
}

/** What start-up says about the main port when anonymous authentication is off. */
export function securityNotice(config: KubeletConfig, adminToken?: string): string | undefined {
  if (!config.enableServer || !failsClosed(config)) return undefined;
  const means = credentials(config, adminToken);
  const port = `every route of ${config.address}:${config.port}${config.tlsCertFile ? " (TLS)" : ""}`;
  const readOnly =
    config.readOnlyPort > 0
      ? `; the read-only port ${config.readOnlyPort} stays unauthenticated (GET routes only)`
      : "";
  return means.length
    ? `authentication.anonymous.enabled is false: ${port} requires ${means.join(" or ")}${readOnly}`
    : `authentication.anonymous.enabled is false: ${port} answers 401 to every request (no --auth_token_file and no client CA to authenticate against)${readOnly}`;
}

/** What start-up says about who may use the server when anonymous callers are let in (failsClosed: securityNotice). */
export function accessNotice(config: KubeletConfig, adminToken?: string): string | undefined {
  if (!config.enableServer || failsClosed(config)) return undefined;
  const mode =
    config.authorizationMode === "AlwaysAllow"
      ? ""
      : ` (as system:anonymous, checked by authorization.mode ${config.authorizationMode})`;
  const debugging = !config.enableDebuggingHandlers
    ? "debugging handlers are off"
    : `debugging and write routes require ${credentials(config, adminToken).join(" or ") || "credentials"}, on loopback too`;
  return `anonymous requests are allowed on ${config.address}:${config.port}: read routes answer anyone${mode}, a wrong token is refused; ${debugging}`;
}

const digest = (text: string) => createHash("sha256").update(text).digest();

/**
 * The user a verified client certificate names: CN, and O as groups, as the API server reads them. A certificate
 * with no CN names nobody (upstream's CommonNameUserConversion): the caller is then anonymous.
 */
function certificateUser(request: Request): UserInfo | undefined {
  const subject = clientCertificateSubject(request);
  const name = Array.isArray(subject?.CN) ? subject.CN[0] : subject?.CN;
  if (!subject || !name) return undefined;
  const groups = subject.O === undefined ? [] : Array.isArray(subject.O) ? subject.O : [subject.O];
  return { name, groups: withAuthenticated(groups) };
}

export interface AuthenticatorDeps {
  /** The admin token (admin-token.ts), accepted beside the token file's. */
  adminToken?: StaticToken;
  /** The node's name: the `name` of every attribute set (default: the host's name). */
  nodeName?: string;
  clock?: Clock;
  log?: Logger;
  /** The --kubeconfig webhook client (default: read from config.kubeconfig when a webhook is configured). */
  client?: WebhookClient;
  rbac?: RbacFactory;
}

export async function loadAuthenticator(config: KubeletConfig, deps: AuthenticatorDeps = {}): Promise<Authenticator> {
  const read = async (flag: string, path: string) => {
    try {
      return await readFile(path, "utf8");
    } catch (error) {
      throw new KubeletError("InvalidConfig", `cannot read --${flag} "${path}": ${(error as Error).message}`);
    }
  };
  const fromFile = config.authTokenFile
    ? parseTokenFile(await read("auth_token_file", config.authTokenFile), config.authTokenFile)
    : [];
  if (config.authTokenFile && fromFile.length === 0)
    throw new KubeletError("InvalidConfig", `--auth_token_file "${config.authTokenFile}" holds no token`);
  const tokens = [...fromFile, ...(deps.adminToken ? [deps.adminToken] : [])].map((t) => ({
    digest: digest(t.token),
    user: t.user,
  }));
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
  const clock = deps.clock ?? systemClock;
  const needsWebhook = config.authenticationTokenWebhook || config.authorizationMode === "Webhook";
  const client =
    deps.client ??
    (needsWebhook && config.kubeconfig ? createWebhookClient(await loadKubeconfig(config.kubeconfig)) : undefined);
  const reviewer: TokenReviewer | undefined =
    config.authenticationTokenWebhook && client
      ? createTokenReviewer({ cacheTtlMs: config.authenticationTokenWebhookCacheTtl }, { client, clock })
      : undefined;
  const authorizer: Authorizer & { stop(): void } = await createAuthorizer(config, {
    ...(config.authorizationMode === "Webhook" && !client ? { withoutServer: true } : {}),
    clock,
    ...(client ? { client } : {}),
    ...(deps.log ? { log: deps.log } : {}),
    ...(deps.rbac ? { rbac: deps.rbac } : {}),
  });
  const nodeName = deps.nodeName ?? hostname();
  const log = deps.log;

  return {
    anonymous: !failsClosed(config),
    anonymousDebugging: config.authorizationMode !== "AlwaysAllow",
    tls,
    async authenticate(request) {
      const header = request.headers.get("authorization");
      if (header !== null) {
        // As the Go kubelet: a bad bearer token is an error, never anonymous.
        const match = /^Bearer\s+(.+)$/i.exec(header);
        if (!match) return "unauthenticated";
        const token = match[1]!.trim();
        const given = digest(token);
        const known = tokens.find((t) => timingSafeEqual(t.digest, given));
        if (known) return known.user;
        if (!reviewer) return "unauthenticated";
        try {
          return (await reviewer(token)) ?? "unauthenticated";
        } catch (error) {
          log?.warn(
            `authentication webhook ${client!.server} did not answer a TokenReview: ${(error as Error).message}; the request is refused (401)`,
          );
          return "unauthenticated";
        }
      }
      return (tls?.ca && certificateUser(request)) || ANONYMOUS;
    },
    async authorize(user, method, path, query) {
      const all = requestAttributes(user, method, path, nodeName, query);
      let last: { attributes: RequestAttributes; result: AuthorizationResult } | undefined;
      // As the API server: system:masters is allowed whatever the mode says (the admin token's group), so local
      // administration survives a webhook outage or a policy file that locks everyone out.
      if (user.groups.includes(PRIVILEGED_GROUP))
        return { attributes: all[0]!, result: { decision: "allow", reason: `${PRIVILEGED_GROUP} is always allowed` } };
      for (const attributes of all) {
        let result: AuthorizationResult;
        try {
          result = await authorizer.authorize(attributes);
        } catch (error) {
          const message = `Authorization error (user=${user.name}, verb=${attributes.verb}, resource=${attributes.resource}, subresource=${attributes.subresource})`;
          log?.warn(
            `${message}: the ${config.authorizationMode} authorizer${client ? ` at ${client.server}` : ""} did not answer: ${(error as Error).message}; refusing ${method} ${path} (fail closed)`,
          );
          return {
            attributes,
            result: { decision: "deny", reason: `authorizer error: ${(error as Error).message}` },
            refusal: { status: 500, message },
          };
        }
        last = { attributes, result };
        if (result.decision === "allow") return last;
      }
      const a = last!.attributes;
      const subresource =
        all.length === 1
          ? `subresource=${a.subresource}`
          : `subresource(s)=[${all.map((x) => x.subresource).join(" ")}]`;
      const message = `Forbidden (user=${user.name}, verb=${a.verb}, resource=${a.resource}, ${subresource})`;
      log?.debug(`${message}. Reason: ${JSON.stringify(last!.result.reason)}.`);
      return { ...last!, refusal: { status: 403, message } };
    },
    stop: () => authorizer.stop(),
  };
}
