// Request attributes as the Go kubelet's GetRequestAttributes builds them, for authorizer tests.
import type { RequestAttributes, UserInfo } from "../server/authorizer.ts";
import { nodeAttributes } from "../server/authn/request-attributes.ts";

/** `verb` on `nodes/<subresource>` of node-1 by `user` (no groups unless given); `fields` override the rest. */
export function nodeRequest(
  user: string | UserInfo,
  verb: string,
  subresource: string,
  fields: Partial<RequestAttributes> = {},
): RequestAttributes {
  const who = typeof user === "string" ? { name: user, groups: [] } : user;
  return { ...nodeAttributes(who, verb, subresource, "node-1", "/"), ...fields };
}
