// print-config: the effective configuration as YAML or JSON (optionally with each value's origin),
// and the commented config file an installer writes.
import { stringifyYaml } from "../api/manifest.ts";
import type { ResolvedConfig } from "./config.ts";
import type { KubeletConfig } from "./config-types.ts";
import { CONFIG_FILE_ENV, INSTALLED_CONFIG_FILE } from "./config-file-path.ts";
import { FLAGS, type FlagSpec } from "./flags.ts";
import { KUBELET_CONFIGURATION } from "./kubelet-configuration.ts";
import { formatDuration } from "../api/duration.ts";

/** The effective configuration as snake_case YAML (or JSON), optionally marking each value's origin. */
export function printConfig(
  resolved: ResolvedConfig,
  options: { format: "yaml" | "json"; showOrigin: boolean },
): string {
  const origin = (key: keyof KubeletConfig) =>
    resolved.origins[key] === "file" && resolved.fileFields[key]
      ? `file (${resolved.fileFields[key]})`
      : resolved.origins[key];
  const entries = FLAGS.map((spec) => {
    const value = resolved.config[spec.key];
    return [spec.flag, spec.type === "duration" ? formatDuration(value as number) : value, origin(spec.key)] as const;
  });
  const values = Object.fromEntries(entries.map(([flag, value]) => [flag, value]));
  if (resolved.config.configFile) values.config_file = resolved.config.configFile;
  if (options.format === "json") {
    const body = options.showOrigin
      ? {
          config: values,
          origins: Object.fromEntries(entries.map(([flag, , from]) => [flag, from])),
          notApplicable: resolved.notApplicable,
        }
      : values;
    return JSON.stringify(body, null, 2) + "\n";
  }
  const notes = resolved.notApplicable.length
    ? [
        "# accepted from the config file but not applicable here:",
        ...resolved.notApplicable.map((n) => `#   ${n.field}: ${n.why}`),
      ].join("\n") + "\n"
    : "";
  if (!options.showOrigin) return stringifyYaml(values) + notes;
  return (
    entries
      .map(([flag, value, from]) => `${flag}: ${stringifyYaml(value, { flow: true }).trimEnd()}  # ${from}`)
      .join("\n") +
    "\n" +
    notes
  );
}

/** A setting's value as the config file and the docs write it: `1m30s`, `[]`, `""`, `{memory.available: 100Mi}`. */
export function settingText(spec: FlagSpec, value: unknown): string {
  return stringifyYaml(spec.type === "duration" ? formatDuration(value as number) : value, { flow: true }).trim();
}

/**
 * The config file an installer writes (`print-config --commented`): every key with what it does,
 * its flag and KubeletConfiguration names, commented out at its default; keys set by a flag or
 * the config file are written out, so the file starts from the installer's choices.
 */
export function commentedConfigFile(resolved: ResolvedConfig): string {
  const lines = [
    "# kubelet configuration, read by `kubelet run --config_file <this file>`; at " + INSTALLED_CONFIG_FILE,
    `# (or $${CONFIG_FILE_ENV}) every kubelet command reads it without --config_file.`,
    "# Keys are flag names (sync_frequency) or KubeletConfiguration names (syncFrequency); a flag given",
    "# on the command line wins over this file. Each commented line shows a setting at its default:",
    "# uncomment it to change it. `kubelet print-config --config_file <this file> --show-origin` checks it.",
  ];
  for (const spec of FLAGS) {
    const text = settingText(spec, resolved.config[spec.key]);
    const fields = KUBELET_CONFIGURATION.filter((row) => row.key === spec.key).map((row) => row.path);
    const names = [`--${spec.flag}`, ...(spec.short ? [`-${spec.short}`] : []), ...fields];
    lines.push("", `# ${spec.description}. [${names.join(", ")}]`);
    lines.push(`${resolved.origins[spec.key] === "default" ? "# " : ""}${spec.flag}: ${text}`);
  }
  return lines.join("\n") + "\n";
}
