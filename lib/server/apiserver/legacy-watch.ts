// The deprecated watch prefix (/api/v1/watch/..., /apis/{group}/{version}/watch/...) as kube-apiserver still serves
// it: the same watch as the collection's `?watch=true`, one object's watch being the collection narrowed by
// metadata.name. The authorizer already reads these paths as verb "watch" (request-info.ts, as RequestInfoFactory).

/** The `?watch=true` request a legacy watch path stands for, or undefined when `url` is not one. */
export function legacyWatchURL(url: URL): URL | undefined {
  const match = /^(\/api\/[^/]+|\/apis\/[^/]+\/[^/]+)\/watch\/(.+?)\/?$/.exec(url.pathname);
  if (!match) return undefined;
  const [, prefix, rest] = match as unknown as [string, string, string];
  const parts = rest.split("/");
  const namespaced = parts[0] === "namespaces" && parts.length >= 3;
  const [resource, name, extra] = namespaced ? parts.slice(2) : parts;
  // A subresource has no watch; it is left for the routes to refuse as they would any unknown path.
  if (!resource || extra !== undefined) return undefined;
  const out = new URL(url);
  out.pathname = `${prefix}/${namespaced ? `namespaces/${parts[1]}/` : ""}${resource}`;
  out.searchParams.set("watch", "true");
  if (name) {
    // As the watch handler does for a named watch: the name joins the field selector.
    const given = url.searchParams.get("fieldSelector");
    out.searchParams.set("fieldSelector", given ? `${given},metadata.name=${name}` : `metadata.name=${name}`);
  }
  return out;
}
