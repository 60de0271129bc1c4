import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { SCHEMA } from "./schema.ts";

const TYPES = join(import.meta.dir, "../../node_modules/kubernetes-types");

/** Each `export interface` of a kubernetes-types .d.ts, with its properties and their declared types. */
function declaredInterfaces(file: string): Map<string, Map<string, string>> {
  const text = readFileSync(join(TYPES, file), "utf8")
    .replace(/\/\*[\s\S]*?\*\//g, "")
    .replace(/\/\/.*$/gm, "");
  const interfaces = new Map<string, Map<string, string>>();
  for (const match of text.matchAll(/export interface (\w+)\s*\{/g)) {
    const fields = new Map<string, string>();
    let depth = 0;
    let i = match.index + match[0].length;
    let start = i;
    for (; depth >= 0 && i < text.length; i++) {
      const c = text[i];
      if (c === "{" || c === "(" || c === "<" || c === "[") depth++;
      else if (c === "}" || c === ")" || c === ">" || c === "]") depth--;
      if ((c === ";" && depth === 0) || depth < 0) {
        const member = text.slice(start, i).trim();
        const property = /^(?:readonly\s+)?([\w$]+|"[^"]+")\??\s*:\s*([\s\S]+)$/.exec(member);
        if (property) fields.set(property[1]!.replace(/"/g, ""), property[2]!.replace(/\s+/g, " "));
        else if (member) throw new Error(`cannot read member ${JSON.stringify(member)} of ${match[1]} in ${file}`);
        start = i + 1;
      }
    }
    interfaces.set(match[1]!, fields);
  }
  return interfaces;
}
const declared = new Map([...declaredInterfaces("core/v1.d.ts"), ...declaredInterfaces("meta/v1.d.ts")]);

/** A schema kind's object type ("Meta", "[Container]" → "Container"), undefined for a scalar, "any", "!…" or "x…". */
const objectKind = (kind: string) => {
  const name = kind.startsWith("[") ? kind.slice(1, -1) : kind;
  return SCHEMA[name] ? name : undefined;
};
/** A declared type's interface ("PodSpec", "Array<Container>" → "Container"), undefined for anything else. */
const declaredKind = (type: string) => {
  const name = /^(?:Array<(\w+)>|(\w+))$/.exec(type)?.slice(1).find(Boolean);
  return name && declared.has(name) ? name : undefined;
};

/** Pairs of (schema type, kubernetes-types interface) reached from Pod through the fields both know as objects. */
function pairs(): Array<[string, string]> {
  const found = new Map<string, [string, string]>([["Pod Pod", ["Pod", "Pod"]]]);
  for (const [ours, theirs] of found.values())
    for (const [field, kind] of Object.entries(SCHEMA[ours]!)) {
      const next = [objectKind(kind), declaredKind(declared.get(theirs)!.get(field) ?? "")] as const;
      if (next[0] && next[1]) found.set(next.join(" "), next as [string, string]);
    }
  return [...found.values()];
}

/**
 * Fields schema.ts knows that kubernetes-types does not declare yet (its newest release, 1.30, predates them), with the
 * Kubernetes release that added each. An entry kubernetes-types comes to declare fails the test: remove it then.
 */
const NEWER_THAN_TYPES: Record<string, string> = {
  "PodSecurityContext.supplementalGroupsPolicy": "1.31 (SupplementalGroupsPolicy)",
  "Volume.image": "1.31 (ImageVolume)",
  "PodSecurityContext.seLinuxChangePolicy": "1.32 (SELinuxChangePolicy)",
  "PodSpec.resources": "1.32 (PodLevelResources)",
  "Lifecycle.stopSignal": "1.33 (ContainerStopSignals)",
};

/**
 * Fields kubernetes-types declares that schema.ts deliberately leaves unknown (a typo warning, an error under
 * --strict). None: a field this kubelet does not honour is listed in schema.ts with "!" (ignored, with a warning
 * saying why) or "x" (refused, with the reason), as docs/pod-fields.md describes.
 */
const DELIBERATELY_UNKNOWN: Record<string, string> = {};

/** Fields schema.ts types otherwise than kubernetes-types, on purpose. */
const TYPED_OTHERWISE: Record<string, string> = {
  "GRPCAction.port": "an int32 upstream; a string is let through so validation can say gRPC probes take no port name",
};

/** The declared types each scalar kind of schema.ts stands for. */
const SCALAR: Record<string, RegExp> = {
  string: /^(string|"[^"]*")$/,
  int: /^number$/,
  bool: /^boolean$/,
  quantity: /^Quantity$/,
  intstr: /^(IntOrString|number \| string)$/,
  strings: /^Array<string>$/,
  ints: /^Array<number>$/,
  labels: /^\{ \[name: string\]: string; \}$/,
  quantities: /^\{ \[name: string\]: Quantity; \}$/,
};

/** `Type.field (schema.ts Kind)` for each field of each pair that `pick` reports. */
function report(pick: (ours: string, theirs: string) => string[]): string[] {
  return pairs().flatMap(([ours, theirs]) =>
    pick(ours, theirs).map((field) => `${theirs}.${field} (schema.ts ${ours})`),
  );
}
const listed = (list: Record<string, string>, theirs: string, field: string) =>
  Object.hasOwn(list, `${theirs}.${field}`);

describe("schema.ts against kubernetes-types (the official API types)", () => {
  test("every object schema.ts knows is reached from Pod and compared with a kubernetes-types interface", () => {
    const compared = new Set(pairs().map(([ours]) => ours));
    expect(Object.keys(SCHEMA).filter((type) => !compared.has(type))).toEqual([]);
  });

  test("every field kubernetes-types declares on a pod's objects is known to schema.ts, unless deliberately left unknown", () => {
    const missing = report((ours, theirs) =>
      [...declared.get(theirs)!.keys()].filter(
        (field) => !Object.hasOwn(SCHEMA[ours]!, field) && !listed(DELIBERATELY_UNKNOWN, theirs, field),
      ),
    );
    expect(missing).toEqual([]);
  });

  test("every field schema.ts knows is declared by kubernetes-types, unless listed as newer than it", () => {
    const extra = report((ours, theirs) =>
      Object.keys(SCHEMA[ours]!).filter(
        (field) => !declared.get(theirs)!.has(field) && !listed(NEWER_THAN_TYPES, theirs, field),
      ),
    );
    expect(extra).toEqual([]);
  });

  test("each field's value has the type kubernetes-types declares, unless listed as typed otherwise", () => {
    const mistyped = report((ours, theirs) =>
      Object.entries(SCHEMA[ours]!)
        .filter(([field, kind]) => {
          const type = declared.get(theirs)!.get(field);
          if (type === undefined || kind === "any" || /^[!x]/.test(kind) || listed(TYPED_OTHERWISE, theirs, field))
            return false;
          const list = kind.startsWith("[") === type.startsWith("Array<");
          return objectKind(kind) ? !(declaredKind(type) && list) : !SCALAR[kind]?.test(type);
        })
        .map(([field, kind]) => `${field}: ${kind}, declared ${declared.get(theirs)!.get(field)}`),
    );
    expect(mistyped).toEqual([]);
  });

  test("the lists of exceptions name only fields that still need them", () => {
    const all = new Map(pairs().map(([ours, theirs]) => [theirs, ours]));
    const field = (entry: string) => {
      const [theirs, name] = entry.split(".") as [string, string];
      return { ours: SCHEMA[all.get(theirs) ?? ""], theirs: declared.get(theirs), name };
    };
    const stale = [
      ...Object.keys(NEWER_THAN_TYPES).filter((e) => {
        const f = field(e);
        return !f.ours || !Object.hasOwn(f.ours, f.name) || f.theirs?.has(f.name) !== false;
      }),
      ...Object.keys(DELIBERATELY_UNKNOWN).filter((e) => {
        const f = field(e);
        return !f.ours || Object.hasOwn(f.ours, f.name) || !f.theirs?.has(f.name);
      }),
      ...Object.keys(TYPED_OTHERWISE).filter((e) => {
        const f = field(e);
        return !f.ours || !Object.hasOwn(f.ours, f.name) || !f.theirs?.has(f.name);
      }),
    ];
    expect(stale).toEqual([]);
  });
});
