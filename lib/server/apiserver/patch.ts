// The PATCH bodies the API server applies to a pod: JSON patch (RFC 6902), JSON merge patch (RFC 7386) and
// strategic merge patch (k8s.io/apimachinery strategicpatch: lists merged by their patchMergeKey, the $patch,
// $retainKeys, $setElementOrder and $deleteFromPrimitiveList directives), which client-side `kubectl apply` sends.
import { badRequest, ApiError } from "./api-status.ts";

type Json = unknown;
type JsonObject = Record<string, Json>;

const isObject = (v: Json): v is JsonObject => typeof v === "object" && v !== null && !Array.isArray(v);
const clone = <T>(v: T): T => structuredClone(v);

/** RFC 7386: objects merged recursively, null deletes, anything else replaces. */
export function mergePatch(target: Json, patch: Json): Json {
  if (!isObject(patch)) return clone(patch);
  const out: JsonObject = isObject(target) ? { ...target } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete out[key];
    else out[key] = mergePatch(out[key], value);
  }
  return out;
}

/** RFC 6901 pointer → path segments. */
function pointer(path: string): string[] {
  if (path === "") return [];
  if (!path.startsWith("/")) throw badRequest(`json patch path "${path}" must start with "/"`);
  return path
    .slice(1)
    .split("/")
    .map((s) => s.replace(/~1/g, "/").replace(/~0/g, "~"));
}

function parentOf(doc: Json, segments: string[], path: string): { parent: JsonObject | Json[]; key: string } {
  let node = doc;
  for (const segment of segments.slice(0, -1)) {
    node = Array.isArray(node) ? node[Number(segment)] : isObject(node) ? node[segment] : undefined;
    if (node === undefined)
      throw badRequest(
        `the server rejected our request due to an error in our request: doc is missing path: "${path}"`,
      );
  }
  if (!isObject(node) && !Array.isArray(node)) throw badRequest(`doc is missing path: "${path}"`);
  return { parent: node, key: segments[segments.length - 1]! };
}

function read(doc: Json, path: string): Json {
  let node = doc;
  for (const segment of pointer(path)) {
    node = Array.isArray(node) ? node[Number(segment)] : isObject(node) ? node[segment] : undefined;
    if (node === undefined) throw badRequest(`doc is missing path: "${path}": missing value`);
  }
  return clone(node);
}

function remove(doc: Json, path: string): Json {
  const segments = pointer(path);
  const { parent, key } = parentOf(doc, segments, path);
  if (Array.isArray(parent)) {
    const index = Number(key);
    if (!Number.isInteger(index) || index < 0 || index >= parent.length)
      throw badRequest(`Unable to remove nonexistent key: ${key}: missing value`);
    return parent.splice(index, 1)[0];
  }
  if (!(key in parent)) throw badRequest(`Unable to remove nonexistent key: ${key}: missing value`);
  const value = parent[key];
  delete parent[key];
  return value;
}

function add(doc: Json, path: string, value: Json, replace: boolean): Json {
  const segments = pointer(path);
  if (segments.length === 0) return clone(value);
  const { parent, key } = parentOf(doc, segments, path);
  if (Array.isArray(parent)) {
    const index = key === "-" ? parent.length : Number(key);
    if (!Number.isInteger(index) || index < 0 || index > parent.length - (replace ? 1 : 0))
      throw badRequest(`json patch index ${key} is out of bounds at "${path}"`);
    parent.splice(index, replace ? 1 : 0, clone(value));
  } else {
    if (replace && !(key in parent))
      throw badRequest(`replace operation does not apply: doc is missing key: ${path}: missing value`);
    parent[key] = clone(value);
  }
  return doc;
}

/** RFC 6902 operations in order; a failing test or a missing path rejects the whole patch. */
export function jsonPatch(target: Json, operations: Json): Json {
  if (!Array.isArray(operations)) throw badRequest("json patch must be a list of operations");
  let doc = clone(target);
  for (const op of operations) {
    if (!isObject(op) || typeof op.path !== "string")
      throw badRequest(`invalid json patch operation: ${JSON.stringify(op)}`);
    switch (op.op) {
      case "add":
        doc = add(doc, op.path, op.value, false);
        break;
      case "replace":
        doc = add(doc, op.path, op.value, true);
        break;
      case "remove":
        remove(doc, op.path);
        break;
      case "move":
      case "copy": {
        const value = read(doc, String(op.from));
        if (op.op === "move") remove(doc, String(op.from));
        doc = add(doc, op.path, value, false);
        break;
      }
      case "test":
        if (JSON.stringify(read(doc, op.path)) !== JSON.stringify(op.value))
          throw new ApiError({
            kind: "Status",
            apiVersion: "v1",
            metadata: {},
            status: "Failure",
            message: `the server rejected our request due to an error in our request: testing value ${op.path} failed`,
            reason: "Invalid",
            code: 422,
          });
        break;
      default:
        throw badRequest(`Unexpected kind: ${String(op.op)}`);
    }
  }
  return doc;
}

/** patchMergeKey of the pod's merged lists, by field path (list items leave no segment). */
const MERGE_KEYS: Record<string, string> = {
  "spec.containers": "name",
  "spec.initContainers": "name",
  "spec.ephemeralContainers": "name",
  "spec.volumes": "name",
  "spec.imagePullSecrets": "name",
  "spec.hostAliases": "ip",
  "spec.topologySpreadConstraints": "topologyKey",
  "spec.resourceClaims": "name",
  "spec.schedulingGates": "name",
  "status.conditions": "type",
  "metadata.ownerReferences": "uid",
};
/** Fields of every container list (containers, initContainers, ephemeralContainers). */
const CONTAINER_MERGE_KEYS: Record<string, string> = {
  ports: "containerPort",
  env: "name",
  volumeMounts: "mountPath",
  volumeDevices: "devicePath",
};
/** Lists of scalars merged as sets. */
const PRIMITIVE_MERGE = new Set(["metadata.finalizers"]);

function mergeKeyOf(path: string): string | undefined {
  if (MERGE_KEYS[path]) return MERGE_KEYS[path];
  const container = /^spec\.(containers|initContainers|ephemeralContainers)\.(\w+)$/.exec(path);
  return container ? CONTAINER_MERGE_KEYS[container[2]!] : undefined;
}

const DIRECTIVE = "$patch";

/** Strategic merge of `patch` into `target` at `path` (a pod: paths as in MERGE_KEYS). */
export function strategicMergePatch(target: Json, patch: Json, path = ""): Json {
  if (!isObject(patch)) return clone(patch);
  if (patch[DIRECTIVE] === "delete") return undefined;
  if (patch[DIRECTIVE] === "replace") {
    const { [DIRECTIVE]: _, ...rest } = patch;
    return clone(rest);
  }
  const out: JsonObject = isObject(target) ? { ...target } : {};
  const retain = Array.isArray(patch.$retainKeys) ? new Set(patch.$retainKeys as string[]) : undefined;
  for (const [key, value] of Object.entries(patch)) {
    if (key === DIRECTIVE || key === "$retainKeys" || key.startsWith("$setElementOrder/")) continue;
    if (key.startsWith("$deleteFromPrimitiveList/")) {
      const field = key.slice("$deleteFromPrimitiveList/".length);
      const drop = new Set((value as Json[]).map((v) => JSON.stringify(v)));
      if (Array.isArray(out[field])) out[field] = (out[field] as Json[]).filter((v) => !drop.has(JSON.stringify(v)));
      continue;
    }
    const at = path ? `${path}.${key}` : key;
    if (value === null) {
      delete out[key];
    } else if (Array.isArray(value)) {
      const order = patch[`$setElementOrder/${key}`];
      out[key] = mergeList(out[key], value, at, Array.isArray(order) ? order : undefined);
    } else if (isObject(value)) {
      const merged = strategicMergePatch(out[key], value, at);
      if (merged === undefined) delete out[key];
      else out[key] = merged;
    } else {
      out[key] = value;
    }
  }
  if (retain) for (const key of Object.keys(out)) if (!retain.has(key)) delete out[key];
  return out;
}

function mergeList(target: Json, patch: Json[], path: string, order: Json[] | undefined): Json[] {
  const current = Array.isArray(target) ? target : [];
  if (PRIMITIVE_MERGE.has(path)) {
    const seen = new Set(current.map((v) => JSON.stringify(v)));
    return [...current, ...patch.filter((v) => !seen.has(JSON.stringify(v)))];
  }
  const key = mergeKeyOf(path);
  if (!key) {
    // Lists without a merge key are replaced; {$patch: replace} in a keyed list also replaces.
    return clone(patch.filter((item) => !(isObject(item) && item[DIRECTIVE])));
  }
  if (patch.some((item) => isObject(item) && item[DIRECTIVE] === "replace"))
    return clone(patch.filter((item) => !(isObject(item) && item[DIRECTIVE] === "replace")));
  const result = current.map((item) => clone(item));
  for (const item of patch) {
    if (!isObject(item)) continue;
    const index = result.findIndex((existing) => isObject(existing) && existing[key] === item[key]);
    if (item[DIRECTIVE] === "delete") {
      if (index >= 0) result.splice(index, 1);
      continue;
    }
    if (index >= 0) result[index] = strategicMergePatch(result[index], item, path);
    else result.push(strategicMergePatch(undefined, item, path));
  }
  if (!order) return result;
  // $setElementOrder: the listed items in its order, then the rest as they were.
  const position = (item: Json) => order.findIndex((o) => isObject(o) && isObject(item) && o[key] === item[key]);
  return [...result].sort((a, b) => {
    const pa = position(a);
    const pb = position(b);
    return (pa < 0 ? Infinity : pa) - (pb < 0 ? Infinity : pb);
  });
}

/** The PATCH content types the pod routes accept, by their patch.PatchType. */
export const PATCH_TYPES = {
  "application/json-patch+json": "json",
  "application/merge-patch+json": "merge",
  "application/strategic-merge-patch+json": "strategic",
  "application/apply-patch+yaml": "apply",
  "application/apply-patch+cbor": "apply",
} as const;

/** `patch` (already parsed) applied to `target` as `type` says. */
export function applyPatch(type: "json" | "merge" | "strategic", target: Json, patch: Json): Json {
  if (type === "json") return jsonPatch(target, patch);
  if (!isObject(patch)) throw badRequest(`the body of a ${type} patch must be an object`);
  return type === "merge" ? mergePatch(target, patch) : strategicMergePatch(target, patch);
}
