// /configz as the Go kubelet serves it: {"kubeletconfig": KubeletConfiguration}, the settings in
// effect under KubeletConfiguration's own field names (config/kubelet-configuration.ts maps them),
// durations as Go duration strings, kind and apiVersion set.
import type { KubeletConfig } from "../config/config-types.ts";
import { KUBELET_CONFIGURATION } from "../config/kubelet-configuration.ts";

/** Milliseconds as Go's time.Duration.String(): "0s", "500ms", "20s", "1m0s", "1h30m0s", "1.5s". */
export function goDuration(ms: number): string {
  if (ms === 0) return "0s";
  const sign = ms < 0 ? "-" : "";
  let rest = Math.abs(ms);
  if (rest < 1000) return `${sign}${rest}ms`;
  const hours = Math.floor(rest / 3_600_000);
  rest -= hours * 3_600_000;
  const minutes = Math.floor(rest / 60_000);
  rest -= minutes * 60_000;
  const seconds = `${Number((rest / 1000).toFixed(3))}s`;
  if (hours) return `${sign}${hours}h${minutes}m${seconds}`;
  if (minutes) return `${sign}${minutes}m${seconds}`;
  return `${sign}${seconds}`;
}

/** The file's value of a setting: the inverse of the row's conversion. */
function fileValue(path: string, type: string, value: unknown): unknown {
  if (path === "nodeLeaseDurationSeconds") return Math.round((value as number) / 1000);
  if (path === "logging.verbosity") return Math.max(0, (value as number) - 1);
  if ((type === "duration" || type === "nanosOrDuration") && typeof value === "number") return goDuration(value);
  return value;
}

/** The KubeletConfiguration in effect, nested as the file is. */
export function kubeletConfiguration(config: KubeletConfig): Record<string, unknown> {
  const out: Record<string, unknown> = { kind: "KubeletConfiguration", apiVersion: "kubelet.config.k8s.io/v1beta1" };
  for (const row of KUBELET_CONFIGURATION) {
    if (!row.key || config[row.key] === undefined) continue;
    const parts = row.path.split(".");
    let target = out;
    for (const part of parts.slice(0, -1)) target = (target[part] ??= {}) as Record<string, unknown>;
    target[parts.at(-1)!] = fileValue(row.path, row.type, config[row.key]);
  }
  return out;
}
