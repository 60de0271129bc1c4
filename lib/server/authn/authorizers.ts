// The authorization mode's authorizer: AlwaysAllow, Webhook (SubjectAccessReview to the --kubeconfig server) or
// RBAC (the policy file of lib/server/rbac/).
import type { Clock } from "../../clock.ts";
import type { KubeletConfig } from "../../config/config-types.ts";
import { KubeletError } from "../../api/types.ts";
import type { Logger } from "../../log.ts";
import type { Authorizer } from "../authorizer.ts";
import { createRbacAuthorizer } from "../rbac/rbac-authorizer.ts";
import { createWebhookAuthorizer } from "./subject-access-review.ts";
import type { WebhookClient } from "./webhook-client.ts";

/** Allows every request (the authenticated ones: the info server refuses anonymous debugging requests itself). */
export const ALWAYS_ALLOW: Authorizer = { authorize: async () => ({ decision: "allow", reason: "" }) };

/** The RBAC policy-file authorizer's factory (lib/server/rbac/). */
export type RbacFactory = (options: { file: string; log?: Logger }) => Promise<Authorizer & { stop(): void }>;

export interface AuthorizerDeps {
  clock: Clock;
  /** The --kubeconfig client (Webhook mode needs one). */
  client?: WebhookClient;
  log?: Logger;
  /** The RBAC policy-file authorizer's factory (default: rbac-authorizer.ts's createRbacAuthorizer). */
  rbac?: RbacFactory;
  /** Webhook mode with no --kubeconfig: every request is denied, saying why. */
  withoutServer?: boolean;
}

/** Webhook mode's authorizer when no server is named: fails closed. */
const NO_SERVER: Authorizer = {
  authorize: async () => ({
    decision: "deny",
    reason: "authorization.mode is Webhook and no --kubeconfig names a server",
  }),
};

/** The authorizer for `config.authorizationMode`, with its stop function. */
export async function createAuthorizer(
  config: Pick<
    KubeletConfig,
    | "authorizationMode"
    | "authorizationPolicyFile"
    | "authorizationWebhookCacheAuthorizedTtl"
    | "authorizationWebhookCacheUnauthorizedTtl"
  >,
  deps: AuthorizerDeps,
): Promise<Authorizer & { stop(): void }> {
  const mode = config.authorizationMode;
  if (mode === "Webhook") {
    if (deps.withoutServer) return { ...NO_SERVER, stop() {} };
    if (!deps.client)
      throw new KubeletError(
        "InvalidConfig",
        "authorization.mode Webhook needs --kubeconfig naming the server that answers SubjectAccessReview",
      );
    const webhook = createWebhookAuthorizer(
      {
        cacheAuthorizedTtlMs: config.authorizationWebhookCacheAuthorizedTtl,
        cacheUnauthorizedTtlMs: config.authorizationWebhookCacheUnauthorizedTtl,
      },
      { client: deps.client, clock: deps.clock },
    );
    return { authorize: (a) => webhook.authorize(a), stop() {} };
  }
  if (mode === "RBAC") {
    if (!config.authorizationPolicyFile)
      throw new KubeletError("InvalidConfig", "authorization.mode RBAC needs --authorization_policy_file");
    const factory = deps.rbac ?? createRbacAuthorizer;
    return factory({ file: config.authorizationPolicyFile, ...(deps.log ? { log: deps.log } : {}) });
  }
  return { ...ALWAYS_ALLOW, stop() {} };
}
