// Go durations, as KubeletConfiguration's metav1.Duration fields and the flags write them: Go's
// time.ParseDuration ("1m30s", "500ms") and its printing, in milliseconds.
import { KubeletError } from "./types.ts";

const UNITS: Record<string, number> = { ns: 1e-6, us: 1e-3, µs: 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** Go's time.ParseDuration ("1m30s", "500ms", "0"), in milliseconds. */
export function parseDuration(text: string): number {
  const input = String(text).trim();
  if (input === "0") return 0;
  const re = /(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)/gy;
  let total = 0;
  let consumed = 0;
  const sign = input.startsWith("-") ? -1 : 1;
  const body = input.replace(/^[-+]/, "");
  for (let match = re.exec(body); match; match = re.exec(body)) {
    total += Number(match[1]) * UNITS[match[2]!]!;
    consumed = re.lastIndex;
  }
  if (consumed === 0 || consumed !== body.length) {
    throw new KubeletError("InvalidValue", `invalid duration "${text}": use Go syntax such as 500ms, 10s, 1m30s or 1h`);
  }
  return sign * total;
}

/** Milliseconds as Go prints a duration: 10s, 1m30s, 500ms, 0s. */
export function formatDuration(ms: number): string {
  if (ms === 0) return "0s";
  if (ms < 1000) return `${ms}ms`;
  let rest = ms / 1000;
  let out = "";
  const hours = Math.floor(rest / 3600);
  if (hours) out += `${hours}h`;
  rest -= hours * 3600;
  const minutes = Math.floor(rest / 60);
  if (minutes || (hours && rest)) out += `${minutes}m`;
  rest -= minutes * 60;
  if (rest || !out) out += `${Number(rest.toFixed(3))}s`;
  return out;
}
