// authorization.mode: Webhook: each attribute set is sent as a SubjectAccessReview (authorization.k8s.io/v1) to the
// --kubeconfig server; allowed answers are cached for authorization.webhook.cacheAuthorizedTTL and the others for
// cacheUnauthorizedTTL, as upstream's webhook authorizer does, so a scrape keeps working through a short outage.
// A webhook that cannot answer is an error (the request is refused, never allowed) and is not cached.
import type { Clock } from "../../clock.ts";
import type { AuthorizationResult, Authorizer, RequestAttributes } from "../authorizer.ts";
import { createTtlCache } from "./ttl-cache.ts";
import type { WebhookClient } from "./webhook-client.ts";

export const SUBJECT_ACCESS_REVIEW_PATH = "/apis/authorization.k8s.io/v1/subjectaccessreviews";

export interface SubjectAccessReviewOptions {
  cacheAuthorizedTtlMs: number;
  cacheUnauthorizedTtlMs: number;
}

/** The SubjectAccessReview spec for one attribute set. */
export function subjectAccessReviewSpec(a: RequestAttributes): Record<string, unknown> {
  return {
    ...(a.resourceRequest
      ? {
          resourceAttributes: {
            namespace: a.namespace,
            verb: a.verb,
            group: a.apiGroup,
            version: a.apiVersion,
            resource: a.resource,
            subresource: a.subresource,
            name: a.name,
          },
        }
      : { nonResourceAttributes: { path: a.path, verb: a.verb } }),
    user: a.user.name,
    groups: a.user.groups,
    ...(a.user.uid ? { uid: a.user.uid } : {}),
    ...(a.user.extra ? { extra: a.user.extra } : {}),
  };
}

export function createWebhookAuthorizer(
  options: SubjectAccessReviewOptions,
  deps: { client: WebhookClient; clock: Clock },
): Authorizer {
  const cache = createTtlCache<AuthorizationResult>(deps.clock);
  return {
    async authorize(attributes) {
      const spec = subjectAccessReviewSpec(attributes);
      const key = JSON.stringify(spec);
      const cached = cache.get(key);
      if (cached) return cached;
      const answer = (await deps.client.post(SUBJECT_ACCESS_REVIEW_PATH, {
        apiVersion: "authorization.k8s.io/v1",
        kind: "SubjectAccessReview",
        spec,
      })) as { status?: { allowed?: boolean; denied?: boolean; reason?: string; evaluationError?: string } };
      const status = answer?.status ?? {};
      const result: AuthorizationResult = {
        decision: status.allowed ? "allow" : status.denied ? "deny" : "no-opinion",
        reason: status.reason ?? status.evaluationError ?? "",
      };
      cache.set(
        key,
        result,
        result.decision === "allow" ? options.cacheAuthorizedTtlMs : options.cacheUnauthorizedTtlMs,
      );
      return result;
    },
  };
}
