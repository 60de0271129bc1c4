// The merge store's second kind of object: ConfigMaps and Secrets per source, validated (invalid
// ones dropped and reported, the last good version kept), the first claiming source winning a
// name, immutable objects never changed, and listeners told which objects changed.
import {
  configKey,
  configKeyOf,
  describeConfig,
  validateConfigObject,
  type ConfigKind,
  type ConfigLookup,
  type ConfigObject,
} from "../api/config-objects.ts";
import {
  ANNOTATION,
  formatIssue,
  type FieldIssue,
  type PodOperation,
  type RejectedPod,
  type SourceName,
} from "../api/types.ts";
import type { Logger } from "../log.ts";
import type { KubeletMetrics } from "../metrics.ts";

export interface ConfigStore extends ConfigLookup {
  merge(source: SourceName, op: PodOperation, objects: ConfigObject[]): void;
  subscribe(listener: (changed: ReadonlySet<string>) => void): () => void;
  /** Objects dropped now (invalid, duplicate, an edit of an immutable one). */
  rejected(): RejectedPod[];
  /** Every accepted object, source order. */
  all(): ConfigObject[];
}

export function createConfigStore(options: {
  order: SourceName[];
  log?: Logger;
  metrics?: KubeletMetrics;
}): ConfigStore {
  const objects = new Map<SourceName, Map<string, ConfigObject>>();
  const problems = new Map<SourceName, RejectedPod[]>();
  const logged = new Map<SourceName, Set<string>>();
  const validated = new Map<string, FieldIssue[]>();
  const listeners = new Set<(changed: ReadonlySet<string>) => void>();

  const errorsOf = (object: ConfigObject) => {
    const hash = `${object.kind}#${object.metadata.annotations[ANNOTATION.hash]}`;
    let errors = validated.get(hash);
    if (!errors) {
      const issues = validateConfigObject(object);
      errors = issues.filter((i) => i.severity === "error");
      validated.set(hash, errors);
      const warnings = issues.filter((i) => i.severity === "warning");
      if (warnings.length)
        options.log?.warn(`${describeConfig(object)} from ${origin(object)}: ${warnings.map(formatIssue).join("; ")}`);
    }
    return errors;
  };

  const owner = (key: string): SourceName | undefined => options.order.find((s) => objects.get(s)?.has(key));

  const reject = (source: SourceName, object: ConfigObject, issues: FieldIssue[]): RejectedPod => ({
    source,
    origin: object.metadata.annotations[ANNOTATION.origin] ?? source,
    ...(object.metadata.annotations[ANNOTATION.document] !== undefined
      ? { document: Number(object.metadata.annotations[ANNOTATION.document]) }
      : {}),
    pod: `${object.metadata.namespace}/${object.metadata.name}`,
    kind: object.kind,
    issues,
  });

  const report = (source: SourceName, standing: RejectedPod[]) => {
    problems.set(source, standing);
    const before = logged.get(source) ?? new Set<string>();
    const now = new Set<string>();
    for (const r of standing) {
      const signature = `${r.origin}|${r.kind}|${r.pod}|${r.issues.map(formatIssue).join(";")}`;
      now.add(signature);
      if (before.has(signature)) continue;
      options.metrics?.sourceError(source);
      options.log?.warn(
        `dropping ${r.kind} ${r.pod} from ${source} ${r.origin}: ${r.issues.map(formatIssue).join("; ")}`,
        {
          source,
          origin: r.origin,
        },
      );
    }
    logged.set(source, now);
  };

  const merge = (source: SourceName, op: PodOperation, incoming: ConfigObject[]) => {
    const current = objects.get(source) ?? new Map<string, ConfigObject>();
    const next = op === "SET" ? new Map<string, ConfigObject>() : new Map(current);
    const dropped: RejectedPod[] = [];
    const seen = new Set<string>();
    for (const object of incoming) {
      const key = configKeyOf(object);
      if (op === "REMOVE") {
        next.delete(key);
        continue;
      }
      const stored = current.get(key);
      const errors = errorsOf(object);
      const keepStored = () => stored && next.set(key, stored);
      if (errors.length) {
        dropped.push(reject(source, object, errors));
        keepStored(); // an invalid edit keeps the last good version
        continue;
      }
      if (seen.has(key)) {
        dropped.push(
          reject(source, object, [
            {
              path: "metadata.name",
              type: "Duplicate value",
              value: object.metadata.name,
              detail: `${describeConfig(object)} is already defined in ${origin(next.get(key)!)}; the first one wins`,
              severity: "error",
            },
          ]),
        );
        continue;
      }
      seen.add(key);
      const claimedBy = owner(key);
      if (claimedBy && claimedBy !== source) {
        dropped.push(
          reject(source, object, [
            {
              path: "metadata.name",
              type: "Duplicate value",
              value: object.metadata.name,
              detail: `${describeConfig(object)} already comes from the ${claimedBy} source, which keeps it`,
              severity: "error",
            },
          ]),
        );
        continue;
      }
      if (stored?.immutable && hashOf(stored) !== hashOf(object)) {
        // Kubernetes refuses the update; deleting the object and adding it again is the way to change it.
        dropped.push(
          reject(source, object, [
            {
              path: "data",
              type: "Forbidden",
              detail: "field is immutable when `immutable` is set (remove the object, then add it again, to change it)",
              severity: "error",
            },
          ]),
        );
        keepStored();
        continue;
      }
      next.set(key, stored && hashOf(stored) === hashOf(object) ? stored : object);
    }
    const changed = new Set<string>();
    for (const [key, object] of next) if (current.get(key) !== object) changed.add(key);
    for (const key of current.keys()) if (!next.has(key)) changed.add(key);
    objects.set(source, next);
    if (op === "SET") report(source, dropped);
    else
      report(source, [
        ...(problems.get(source) ?? []).filter(
          (r) => !incoming.some((o) => o.kind === r.kind && `${o.metadata.namespace}/${o.metadata.name}` === r.pod),
        ),
        ...dropped,
      ]);
    if (changed.size === 0) return;
    for (const listener of listeners) {
      try {
        listener(changed);
      } catch (error) {
        options.log?.error(`config update listener failed: ${(error as Error).message}`);
      }
    }
  };

  return {
    merge,
    get(kind: ConfigKind, namespace: string, name: string) {
      const key = configKey(kind, namespace, name);
      const source = owner(key);
      return source ? objects.get(source)!.get(key) : undefined;
    },
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    rejected: () => options.order.flatMap((source) => problems.get(source) ?? []),
    all: () => options.order.flatMap((source) => [...(objects.get(source)?.values() ?? [])]),
  };
}

function hashOf(object: ConfigObject): string {
  return object.metadata.annotations[ANNOTATION.hash] ?? "";
}

function origin(object: ConfigObject): string {
  const at = object.metadata.annotations[ANNOTATION.origin] ?? object.metadata.annotations[ANNOTATION.source];
  const document = object.metadata.annotations[ANNOTATION.document];
  return `${at ?? "unknown source"}${document !== undefined ? `[${document}]` : ""}`;
}
