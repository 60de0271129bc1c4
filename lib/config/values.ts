// One raw value, from the command line or the config file, parsed for its flag's type (durations
// with api/duration.ts).
import { parseDuration } from "../api/duration.ts";
import { KubeletError } from "../api/types.ts";
import type { KubeletConfig, MemoryReservation, ShutdownGracePeriodByPodPriority } from "./config-types.ts";
import type { FlagSpec } from "./flags.ts";

/** Parses one raw value (from the command line or the config file) for a flag. */
export function parseValue(spec: FlagSpec, raw: unknown): KubeletConfig[keyof KubeletConfig] {
  const bad = (why: string) =>
    new KubeletError("InvalidValue", `invalid value ${JSON.stringify(raw)} for --${spec.flag}: ${why}`);
  const values = Array.isArray(raw) ? raw : [raw];
  const last = values[values.length - 1];
  switch (spec.type) {
    case "string": {
      if (typeof last === "object") throw bad("expected a string");
      const text = String(last ?? "");
      if (spec.choices && !spec.choices.includes(text))
        throw bad(
          `expected one of ${spec.choices.filter(Boolean).join(", ")}${spec.choices.includes("") ? ' (or "" for the default)' : ""}`,
        );
      return text;
    }
    case "bool": {
      if (typeof last === "boolean") return last;
      const text = String(last);
      if (["1", "t", "T", "true", "TRUE", "True"].includes(text)) return true;
      if (["0", "f", "F", "false", "FALSE", "False"].includes(text)) return false;
      throw bad("expected true or false");
    }
    case "uint": {
      const n = typeof last === "number" ? last : /^\d+$/.test(String(last)) ? Number(last) : NaN;
      if (!Number.isInteger(n) || n < 0) throw bad("expected a non-negative integer");
      if (spec.key.toLowerCase().endsWith("port") && n > 65535) throw bad("a port is at most 65535");
      return n;
    }
    case "int": {
      const n = typeof last === "number" ? last : /^-?\d+$/.test(String(last)) ? Number(last) : NaN;
      if (!Number.isInteger(n)) throw bad("expected an integer");
      return n;
    }
    case "percent": {
      const n = typeof last === "number" ? last : /^\d+$/.test(String(last)) ? Number(last) : NaN;
      if (!Number.isInteger(n) || n < 0 || n > 100) throw bad("expected a percentage from 0 to 100");
      return n;
    }
    case "float": {
      const n = typeof last === "number" ? last : Number(String(last).trim() || NaN);
      if (!Number.isFinite(n) || n < 0) throw bad("expected a non-negative number");
      return n;
    }
    case "duration": {
      if (typeof last === "number" && last !== 0) throw bad("durations need a unit, e.g. 10s or 500ms");
      try {
        const ms = parseDuration(String(last));
        if (ms < 0) throw bad("must not be negative");
        return ms;
      } catch (error) {
        if ((error as KubeletError).code === "InvalidValue" && !(error as Error).message.startsWith("invalid value"))
          throw bad((error as Error).message);
        throw error;
      }
    }
    case "list":
      return values
        .flatMap((v) => String(v).split(","))
        .map((s) => s.trim())
        .filter(Boolean);
    case "headers": {
      if (values.length === 1 && typeof last === "object" && last !== null) {
        return Object.fromEntries(
          Object.entries(last as Record<string, unknown>).map(([k, v]) => [
            k,
            (Array.isArray(v) ? v : [v]).map(String),
          ]),
        );
      }
      const headers: Record<string, string[]> = {};
      for (const value of values) {
        const text = String(value);
        const colon = text.indexOf(":");
        if (colon <= 0) throw bad('expected "Key: Value"');
        (headers[text.slice(0, colon).trim()] ??= []).push(text.slice(colon + 1).trim());
      }
      return headers;
    }
    case "map":
    case "thresholds": {
      // The file gives a mapping; the command line "k=v,k2=v2" (thresholds: "memory.available<100Mi").
      if (values.length === 1 && typeof last === "object" && last !== null) {
        const entries = Object.entries(last as Record<string, unknown>);
        for (const [k, v] of entries) if (typeof v !== "string") throw bad(`${k}: expected a string such as "100Mi"`);
        return Object.fromEntries(entries) as Record<string, string>;
      }
      const separator = spec.type === "map" ? "=" : "<";
      const out: Record<string, string> = {};
      // The command-line parser hands an empty argument (`--eviction_hard ""`: none) over as 0.
      if (last === 0) return out;
      for (const pair of values
        .flatMap((v) => String(v).split(","))
        .map((p) => p.trim())
        .filter(Boolean)) {
        const at = pair.indexOf(separator);
        if (at <= 0)
          throw bad(spec.type === "map" ? 'expected "name=quantity" pairs' : 'expected "signal<quantity" pairs');
        out[pair.slice(0, at).trim()] = pair.slice(at + 1).trim();
      }
      return out;
    }
    case "priorities":
      return parsePriorities(values, bad);
    case "reservedmemory":
      return parseReservedMemory(values, bad);
    case "logformat":
      // "" is the default a written-out config file shows: text on a TTY, else json
      if (last !== "text" && last !== "json" && last !== "") throw bad("expected text or json");
      return last;
    case "runtime":
      if (last !== "docker" && last !== "remote" && last !== "fake") throw bad("expected docker, remote or fake");
      return last;
  }
}

/**
 * shutdownGracePeriodByPodPriority: the file's list of {priority, shutdownGracePeriodSeconds}, or the command
 * line's "priority=seconds" pairs ("0=60,10000=30").
 */
function parsePriorities(values: unknown[], bad: (why: string) => KubeletError): ShutdownGracePeriodByPodPriority[] {
  const out: ShutdownGracePeriodByPodPriority[] = [];
  const add = (where: string, priority: unknown, seconds: unknown) => {
    if (!Number.isInteger(priority) || Math.abs(priority as number) > 2 ** 31 - 1)
      throw bad(`${where}priority: expected an integer (a pod priority, int32), got ${JSON.stringify(priority)}`);
    if (!Number.isInteger(seconds) || (seconds as number) < 0)
      throw bad(`${where}shutdownGracePeriodSeconds: expected a non-negative integer, got ${JSON.stringify(seconds)}`);
    out.push({ priority: priority as number, shutdownGracePeriodSeconds: seconds as number });
  };
  // The command-line parser hands an empty argument (`--shutdown_grace_period_by_pod_priority ""`: none) over as 0.
  if (values.length === 1 && values[0] === 0) return out;
  values.forEach((value, index) => {
    if (typeof value === "object" && value !== null) {
      const { priority, shutdownGracePeriodSeconds, ...rest } = value as Record<string, unknown>;
      const unknown = Object.keys(rest)[0];
      if (unknown)
        throw bad(`[${index}].${unknown}: unknown field: the fields are priority and shutdownGracePeriodSeconds`);
      add(`[${index}].`, priority ?? 0, shutdownGracePeriodSeconds ?? 0);
      return;
    }
    for (const pair of String(value)
      .split(",")
      .map((p) => p.trim())
      .filter(Boolean)) {
      const match = /^(-?\d+)=(\d+)s?$/.exec(pair);
      if (!match) throw bad(`expected "priority=seconds" pairs such as 0=60,10000=30, got "${pair}"`);
      add("", Number(match[1]), Number(match[2]));
    }
  });
  return out;
}

/**
 * reservedMemory: the file's list of {numaNode, limits: {memory: "1Gi"}}, or the command line's upstream form
 * "0:memory=1Gi,hugepages-2Mi=2Gi;1:memory=1Gi" (repeatable).
 */
function parseReservedMemory(values: unknown[], bad: (why: string) => KubeletError): MemoryReservation[] {
  const out: MemoryReservation[] = [];
  if (values.length === 1 && values[0] === 0) return out;
  values.forEach((value, index) => {
    if (typeof value === "object" && value !== null) {
      const { numaNode, limits, ...rest } = value as Record<string, unknown>;
      const unknown = Object.keys(rest)[0];
      if (unknown) throw bad(`[${index}].${unknown}: unknown field: the fields are numaNode and limits`);
      if (!Number.isInteger(numaNode) || (numaNode as number) < 0)
        throw bad(`[${index}].numaNode: expected a NUMA node number, got ${JSON.stringify(numaNode)}`);
      if (typeof limits !== "object" || limits === null || Object.values(limits).some((v) => typeof v !== "string"))
        throw bad(`[${index}].limits: expected a mapping of resources to quantities such as {memory: "1Gi"}`);
      out.push({ numaNode: numaNode as number, limits: limits as Record<string, string> });
      return;
    }
    for (const part of String(value)
      .split(";")
      .map((p) => p.trim())
      .filter(Boolean)) {
      const match = /^(\d+):(.+)$/.exec(part);
      if (!match) throw bad(`expected "node:resource=quantity,…" such as 0:memory=1Gi, got "${part}"`);
      const limits: Record<string, string> = {};
      for (const pair of match[2]!.split(",")) {
        const [name, quantity] = pair.split("=").map((x) => x.trim());
        if (!name || !quantity) throw bad(`expected "resource=quantity" in "${part}"`);
        limits[name] = quantity;
      }
      out.push({ numaNode: Number(match[1]), limits });
    }
  });
  return out;
}
