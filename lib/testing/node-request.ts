// Request attributes as the Go kubelet's GetRequestAttributes builds them, for authorizer tests.
import type { RequestAttributes, UserInfo } from "../server/authorizer.ts";

/** `verb` on `nodes/<subresource>` of node-1 by `user` (no groups unless given); `fields` override the rest. */
export function nodeRequest(
  user: string | UserInfo,
  verb: string,
  subresource: string,
  fields: Partial<RequestAttributes> = {},
): RequestAttributes {
  return {
    user: typeof user === "string" ? { name: user, groups: [] } : user,
    verb,
    resourceRequest: true,
    apiGroup: "",
    apiVersion: "v1",
    resource: "nodes",
    subresource,
    namespace: "",
    name: "node-1",
    path: "/",
    ...fields,
  };
}
