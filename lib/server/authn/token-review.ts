// Webhook token authentication (authentication.webhook.enabled): a bearer token the token file does not know is
// sent as a TokenReview (authentication.k8s.io/v1); answers are cached for authentication.webhook.cacheTTL,
// successes and refusals alike, as upstream's token cache does; an unreachable webhook is not cached.
import { createHash } from "node:crypto";
import type { Clock } from "../../clock.ts";
import type { UserInfo } from "../authorizer.ts";
import { createTtlCache } from "./ttl-cache.ts";
import { withAuthenticated } from "./token-file.ts";
import type { WebhookClient } from "./webhook-client.ts";

export const TOKEN_REVIEW_PATH = "/apis/authentication.k8s.io/v1/tokenreviews";

/** Who the token is (undefined: the webhook says it is not valid); throws when the webhook cannot answer. */
export type TokenReviewer = (token: string) => Promise<UserInfo | undefined>;

interface TokenReviewStatus {
  authenticated?: boolean;
  user?: { username?: string; uid?: string; groups?: string[]; extra?: Record<string, string[]> };
  error?: string;
}

export function createTokenReviewer(
  options: { cacheTtlMs: number },
  deps: { client: WebhookClient; clock: Clock },
): TokenReviewer {
  const cache = createTtlCache<{ user?: UserInfo }>(deps.clock);
  return async (token) => {
    const key = createHash("sha256").update(token).digest("hex");
    const cached = cache.get(key);
    if (cached) return cached.user;
    const answer = (await deps.client.post(TOKEN_REVIEW_PATH, {
      apiVersion: "authentication.k8s.io/v1",
      kind: "TokenReview",
      spec: { token },
    })) as { status?: TokenReviewStatus };
    const status = answer?.status ?? {};
    const user =
      status.authenticated && status.user?.username
        ? {
            name: status.user.username,
            ...(status.user.uid ? { uid: status.user.uid } : {}),
            groups: withAuthenticated(status.user.groups ?? []),
            ...(status.user.extra ? { extra: status.user.extra } : {}),
          }
        : undefined;
    cache.set(key, { user }, options.cacheTtlMs);
    return user;
  };
}
