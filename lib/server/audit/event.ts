// The audit.k8s.io/v1 Event, in upstream's field names (staging/src/k8s.io/apiserver/pkg/apis/audit/v1/types.go),
// and the helpers that fill it: MicroTime timestamps, the user, the source IPs and the response status.
import type { UserInfo } from "../authorizer.ts";

/** audit.k8s.io/v1 ObjectReference. */
export interface AuditObjectRef {
  resource?: string;
  namespace?: string;
  name?: string;
  apiGroup?: string;
  apiVersion?: string;
  subresource?: string;
}

/** The metav1.Status an event carries as responseStatus. */
export interface AuditResponseStatus {
  metadata: Record<string, never>;
  status?: "Success" | "Failure";
  message?: string;
  reason?: string;
  code: number;
}

/** audit.k8s.io/v1 Event at level Metadata (no request or response objects). */
export interface AuditEvent {
  kind: "Event";
  apiVersion: "audit.k8s.io/v1";
  level: "Metadata";
  auditID: string;
  stage: "RequestReceived" | "ResponseStarted" | "ResponseComplete" | "Panic";
  requestURI: string;
  verb: string;
  user: { username?: string; uid?: string; groups?: string[]; extra?: Record<string, string[]> };
  sourceIPs?: string[];
  userAgent?: string;
  objectRef?: AuditObjectRef;
  responseStatus?: AuditResponseStatus;
  requestReceivedTimestamp: string;
  stageTimestamp: string;
  annotations?: Record<string, string>;
}

/** The annotations the authorizer adds upstream (k8s.io/apiserver/pkg/endpoints/filters/authorization.go). */
export const DECISION_ANNOTATION = "authorization.k8s.io/decision";
export const REASON_ANNOTATION = "authorization.k8s.io/reason";
/** This kubelet's own annotations: the pod (namespace/name), the container and an exec's exit code. */
export const POD_ANNOTATION = "kubelet.io/pod";
export const CONTAINER_ANNOTATION = "kubelet.io/container";
export const EXIT_CODE_ANNOTATION = "kubelet.io/exit-code";
/** Why a stream ended without an exit code (the runtime's error, or the client gone). */
export const STREAM_ERROR_ANNOTATION = "kubelet.io/stream-error";

/** metav1.MicroTime as it marshals: RFC 3339 in UTC with six fractional digits. */
export function microTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, ".$1000Z");
}

/** authnv1.UserInfo of a caller; an unknown caller (a failed authentication) is the empty user, as upstream logs it. */
export function auditUser(user: UserInfo | undefined): AuditEvent["user"] {
  if (!user) return {};
  return {
    username: user.name,
    ...(user.uid ? { uid: user.uid } : {}),
    groups: [...user.groups],
    ...(user.extra && Object.keys(user.extra).length ? { extra: user.extra } : {}),
  };
}

/**
 * utilnet.SourceIPs: X-Forwarded-For's addresses, then X-Real-Ip when not among them, then the peer's address
 * when it is not the last one listed. All but the peer can be set by the client.
 */
export function sourceIPs(headers: Headers, peer: string | undefined): string[] {
  const ips = (headers.get("x-forwarded-for") ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  const real = headers.get("x-real-ip")?.trim();
  if (real && !ips.includes(real)) ips.push(real);
  if (peer && ips.at(-1) !== peer) ips.push(peer);
  return ips;
}

/** The responseStatus of an HTTP answer: the code, and for a failure the Status body's status, reason and message. */
export function responseStatus(code: number, body?: { message?: unknown; reason?: unknown }): AuditResponseStatus {
  if (code < 400) return { metadata: {}, code };
  return {
    metadata: {},
    status: "Failure",
    ...(typeof body?.message === "string" ? { message: body.message } : {}),
    ...(typeof body?.reason === "string" ? { reason: body.reason } : {}),
    code,
  };
}

/** upstream's message for a failed authentication (filters/authn_audit.go getAuthMethods). */
export function authenticationFailedMessage(headers: Headers, url: URL, clientCertificate: boolean): string {
  const methods: string[] = [];
  const authorization = (headers.get("authorization") ?? "").trim();
  if (/^basic\s/i.test(authorization)) methods.push("basic");
  const parts = authorization.split(" ");
  if (parts.length > 1 && parts[0]!.toLowerCase() === "bearer") methods.push("bearer");
  if (url.searchParams.get("access_token")?.trim()) methods.push("access_token");
  if (clientCertificate) methods.push("x509");
  return methods.length
    ? `Authentication failed, attempted: ${methods.join(", ")}`
    : "Authentication failed, no credentials provided";
}
