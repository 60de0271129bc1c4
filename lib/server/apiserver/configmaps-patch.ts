// JSON merge patch (RFC 7386), which for ConfigMaps and Secrets is also what a strategic merge patch does: their
// fields are maps and scalars, with no list merged by key. Strategic-merge directives ($patch, $retainKeys…) are
// refused by name rather than applied wrongly.

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/** `target` with `patch` merged in: objects merged key by key, null deletes, anything else replaces. */
export function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isObject(patch)) return patch;
  const result: Record<string, unknown> = isObject(target) ? { ...target } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (key.startsWith("$"))
      throw new Error(`the patch directive "${key}" is not supported here: send the fields themselves`);
    if (value === null) delete result[key];
    else result[key] = mergePatch(result[key], value as Json);
  }
  return result;
}
