// The checkpoint checksum of pkg/kubelet/checkpointmanager/checksum: FNV-32a over go-spew's "%#v" printing of the
// checkpoint struct (its Checksum field zeroed), so our state files and upstream's verify each other.

/** A Go value described for go-spew: its Go type name and its contents. */
export type GoValue =
  | { kind: "string"; type?: string; value: string }
  | { kind: "number"; type: string; value: number }
  | { kind: "bool"; type?: string; value: boolean }
  | { kind: "struct"; type: string; fields: Array<[string, GoValue]> }
  | { kind: "map"; type: string; entries: Array<[string | number, GoValue]> }
  | { kind: "slice"; type: string; items: GoValue[] }
  | { kind: "ptr"; type: string; value?: GoValue };

/**
 * go-spew's Sprintf("%#v") with SortKeys and DisableMethods: types in parentheses, except for map keys, map values
 * and slice items (spew prints no type for them), where a pointer shows as `<*>`. Checked against upstream's
 * sample checkpoints (cpu_manager_state and memory_manager_state tests).
 */
export function spew(value: GoValue, showType = true): string {
  const typed = (type: string, body: string) => (showType ? `(${type})${body}` : body);
  switch (value.kind) {
    case "string":
      return typed(value.type ?? "string", value.value);
    case "number":
      return typed(value.type, String(value.value));
    case "bool":
      return typed(value.type ?? "bool", String(value.value));
    case "struct":
      return typed(value.type, `{${value.fields.map(([name, field]) => `${name}:${spew(field)}`).join(" ")}}`);
    case "map": {
      const sorted = [...value.entries].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
      return typed(value.type, `map[${sorted.map(([key, v]) => `${key}:${spew(v, false)}`).join(" ")}]`);
    }
    case "slice":
      return typed(value.type, `[${value.items.map((item) => spew(item, false)).join(" ")}]`);
    case "ptr":
      // A pointer shows its type once, then the value it points to without its own.
      if (!value.value) return showType ? `(*${value.type})<nil>` : "<nil>";
      return `${showType ? `(*${value.type})` : "<*>"}${spew(value.value, false)}`;
  }
}

/** FNV-1a, 32 bits, over the UTF-8 bytes of `text` (Go's hash/fnv New32a). */
export function fnv32a(text: string): number {
  let hash = 0x811c9dc5;
  for (const byte of new TextEncoder().encode(text)) {
    hash ^= byte;
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash >>> 0;
}

/** checksum.New: the checksum of a checkpoint struct, given with its Checksum field at 0. */
export const checkpointChecksum = (checkpoint: GoValue): number => fnv32a(spew(checkpoint));

/** A map[string]string as go-spew sees it. */
export const stringMap = (entries: Record<string, string>): GoValue => ({
  kind: "map",
  type: "map[string]string",
  entries: Object.entries(entries).map(([k, v]) => [k, { kind: "string", value: v }]),
});
