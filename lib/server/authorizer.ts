// Who a request is and what it asks, in the API server's terms (k8s.io/apiserver's user.Info and
// authorizer.Attributes), and the one interface every authorization mode implements: AlwaysAllow, the
// Webhook (SubjectAccessReview), the local RBAC policy file. The info server builds the attributes per path
// as the Go kubelet's server/auth.go GetRequestAttributes does; audit reads the same values.

/** An authenticated caller (user.Info): a token file's user, a client certificate's CN and O, or a TokenReview's answer. */
export interface UserInfo {
  name: string;
  uid?: string;
  groups: string[];
  extra?: Record<string, string[]>;
}

/** The anonymous caller, as the API server names it. */
export const ANONYMOUS: UserInfo = { name: "system:anonymous", groups: ["system:unauthenticated"] };

/** What a request asks (authorizer.AttributesRecord), resource attributes for the kubelet's paths. */
export interface RequestAttributes {
  user: UserInfo;
  /** get, list, watch, create, update, patch, delete (resource requests); get, post, put… (non-resource). */
  verb: string;
  /** True for `nodes/<subresource>` checks; false for a non-resource path (e.g. /healthz when not mapped). */
  resourceRequest: boolean;
  apiGroup: string;
  apiVersion: string;
  resource: string;
  subresource: string;
  namespace: string;
  name: string;
  /** The request's path, for non-resource requests and audit. */
  path: string;
}

export type Decision = "allow" | "deny" | "no-opinion";

/** One authorizer's answer, with its reason (shown in a 403 and in the audit event). */
export interface AuthorizationResult {
  decision: Decision;
  reason: string;
}

/** An authorization mode. */
export interface Authorizer {
  authorize(attributes: RequestAttributes): Promise<AuthorizationResult>;
}

/** The Hono context variables the server's middleware sets for the handlers and the audit log. */
export interface AuthVariables {
  /** The caller, once authenticated (ANONYMOUS when none was given and anonymous callers are let in). */
  user: UserInfo;
  /** The attributes checked and the decision, once authorized. */
  authorization: { attributes: RequestAttributes; result: AuthorizationResult };
}
