// The info server's audit hook: a Hono middleware that writes one audit.k8s.io/v1 Event per exec, attach,
// port-forward, run, log read and push-source write, allowed or refused (401, 403), with the caller and
// the decision the authentication middleware left in the context, and an exec's exit code when it ends.
import type { MiddlewareHandler } from "hono";
import type { Clock } from "../../clock.ts";
import { longLived } from "../../platform/long-lived.ts";
import { hasClientCertificate } from "../../platform/client-certificate.ts";
import { remoteAddress } from "../../platform/remote-address.ts";
import { webSocketSessionOf } from "../../platform/websocket.ts";
import { ANONYMOUS, type AuthVariables } from "../authorizer.ts";
import type { AuditLog } from "./audit-log.ts";
import { auditTarget } from "./audit-target.ts";
import {
  auditUser,
  authenticationFailedMessage,
  CONTAINER_ANNOTATION,
  DECISION_ANNOTATION,
  EXIT_CODE_ANNOTATION,
  microTime,
  POD_ANNOTATION,
  REASON_ANNOTATION,
  responseStatus,
  sourceIPs,
  STREAM_ERROR_ANNOTATION,
  type AuditEvent,
} from "./event.ts";
import { watchBody, watchWebSocket, type StreamOutcome } from "./stream-end.ts";

export interface AuditMiddlewareOptions {
  log: AuditLog;
  /** The node's name: the object of a node log read (nodes/log). */
  nodeName: string;
}

export interface AuditMiddlewareDeps {
  clock: Pick<Clock, "now">;
  /** A new audit ID (crypto.randomUUID in the composition root). */
  newId(): string;
}

const USER_AGENT_MAX = 1024;

/** The middleware; it passes unaudited requests through untouched. */
export function createAuditMiddleware(
  options: AuditMiddlewareOptions,
  deps: AuditMiddlewareDeps,
): MiddlewareHandler<{ Variables: Partial<AuthVariables> }> {
  return async (c, next) => {
    const url = new URL(c.req.url);
    const target = auditTarget(c.req.method, url.pathname, url.searchParams, options.nodeName);
    if (!target) return next();
    const received = deps.clock.now();
    const auditID = deps.newId();
    const agent = c.req.header("user-agent");
    const base = {
      kind: "Event" as const,
      apiVersion: "audit.k8s.io/v1" as const,
      level: "Metadata" as const,
      auditID,
      requestURI: url.pathname + url.search,
      sourceIPs: sourceIPs(c.req.raw.headers, remoteAddress(c.req.raw)),
      ...(agent
        ? { userAgent: agent.length > USER_AGENT_MAX ? `${agent.slice(0, USER_AGENT_MAX)}...TRUNCATED` : agent }
        : {}),
      objectRef: target.objectRef,
      requestReceivedTimestamp: microTime(received),
    };
    await next();

    // An upgrade's response is the fallback (a 501) that only a server unable to upgrade sends: it switches protocols.
    const upgrade = target.long && webSocketSessionOf(c.res) !== undefined;
    const code = upgrade ? 101 : c.res.status;
    // As the API server, the response names its event (unless a handler passed on a fetched, immutable one).
    if (!upgrade)
      try {
        c.res.headers.set("Audit-Id", auditID);
      } catch {}
    const authorization = c.get("authorization");
    const user = code === 401 ? c.get("user") : (c.get("user") ?? ANONYMOUS);
    let body: { message?: unknown; reason?: unknown } | undefined;
    if (code >= 400 && c.res.headers.get("content-type")?.includes("json"))
      body = (await c.res
        .clone()
        .json()
        .catch(() => undefined)) as typeof body;
    const status = responseStatus(code, body);
    if (code === 401)
      status.message = authenticationFailedMessage(c.req.raw.headers, url, hasClientCertificate(c.req.raw));
    const allowed = authorization ? authorization.result.decision === "allow" : code !== 401 && code !== 403;
    const annotations: Record<string, string> = {
      [DECISION_ANNOTATION]: allowed ? "allow" : "forbid",
      [REASON_ANNOTATION]: authorization?.result.reason ?? (allowed ? "" : (status.message ?? "")),
      ...(target.pod ? { [POD_ANNOTATION]: target.pod } : {}),
      ...(target.container !== undefined ? { [CONTAINER_ANNOTATION]: target.container } : {}),
    };
    const exitCode = c.res.headers.get("x-exit-code");
    if (target.exec && exitCode !== null) annotations[EXIT_CODE_ANNOTATION] = exitCode;
    const event = (stage: AuditEvent["stage"], at: number, extra: Record<string, string> = {}): AuditEvent => ({
      ...base,
      stage,
      verb: authorization?.attributes.verb ?? target.verb,
      user: auditUser(user),
      responseStatus: status,
      stageTimestamp: microTime(at),
      annotations: { ...annotations, ...extra },
    });
    const ended = (outcome: StreamOutcome) =>
      options.log.write(
        event("ResponseComplete", deps.clock.now(), {
          ...(target.exec && outcome.exitCode !== undefined
            ? { [EXIT_CODE_ANNOTATION]: String(outcome.exitCode) }
            : {}),
          ...(outcome.error ? { [STREAM_ERROR_ANNOTATION]: outcome.error } : {}),
        }),
      );
    // As upstream for long-running requests: one event when the stream starts, the last when it ends.
    if (target.long && code < 400) {
      if (!watchWebSocket(c.res, ended)) {
        // Hono copies a response set after the handler, and the copy loses the long-lived mark the server reads.
        c.res = watchBody(c.res, ended);
        longLived(c.res);
      }
      options.log.write({ ...event("RequestReceived", received), responseStatus: undefined });
      return;
    }
    options.log.write(event("ResponseComplete", deps.clock.now()));
  };
}
