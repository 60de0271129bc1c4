// --help: a command's own flags, then the flags of the table it uses, grouped (sources, runtime, server,
// node), each once, with its default, spelled as the docs and the original kubelet spell them (--root_dir).
import { DEFAULT_CONFIG } from "../config/config-types.ts";
import { FLAGS, type FlagSpec } from "../config/flags.ts";
import { settingText } from "../config/print-config.ts";
import { commandFlags, FLAG_GROUPS, flagGroup } from "./command-flags.ts";

/** What help needs of a cac option. */
export interface HelpOption {
  rawName: string;
  description: string;
  config: { default?: unknown };
}

/** What help needs of a cac command. */
export interface HelpCommand {
  name: string;
  rawName: string;
  description: string;
  options: HelpOption[];
}

const TABLE = new Set([...FLAGS.map((f) => f.flag), "config_file"]);

/** `--config-file <path>` as the docs write it, `--config_file <path>`; options outside the table keep their dashes. */
export function docSpelling(rawName: string): string {
  return rawName.replace(/--([a-z0-9-]+)/g, (whole, name: string) => {
    const underscored = name.replace(/-/g, "_");
    return TABLE.has(underscored) ? `--${underscored}` : whole;
  });
}

/** `-c, --config <value>`, `--allow_privileged`, `--sync_frequency <duration>`. */
export function flagName(spec: FlagSpec): string {
  const value = spec.type === "bool" ? "" : spec.type === "duration" ? " <duration>" : " <value>";
  return `${spec.short ? `-${spec.short}, ` : ""}--${spec.flag}${value}`;
}

/** The long name of a cac option in the table's spelling (`config_file`), or undefined. */
function tableName(option: HelpOption): string | undefined {
  const long = /--([a-z0-9-]+)/.exec(option.rawName)?.[1]?.replace(/-/g, "_");
  return long && FLAGS.some((f) => f.flag === long) ? long : undefined;
}

/** The help text of `command`: its own flags, then each group of the table's flags it uses. */
export function commandHelp(command: HelpCommand): string {
  const registered = new Map(command.options.flatMap((o) => (tableName(o) ? [[tableName(o)!, o] as const] : [])));
  const used = commandFlags(command.name).filter((spec) => registered.has(spec.flag));
  // A command given the whole table (run's flags) lists what it uses; a table flag it added itself is its own.
  const wholeTable = registered.size === FLAGS.length;
  const own = command.options.filter((o) => {
    const name = tableName(o);
    return !name || (!wholeTable && !used.some((spec) => spec.flag === name));
  });
  const rows = [
    ...own.map((o) => ({
      group: "own",
      name: docSpelling(o.rawName),
      text: o.description + (o.config.default === undefined ? "" : ` (default: ${String(o.config.default)})`),
    })),
    ...used.map((spec) => ({
      group: flagGroup(spec.flag),
      name: flagName(spec),
      text: `${registered.get(spec.flag)!.description} (default: ${settingText(spec, DEFAULT_CONFIG[spec.key])})`,
    })),
  ];
  const width = Math.max(...rows.map((r) => r.name.length));
  const section = (title: string, group: string) => {
    const lines = rows.filter((r) => r.group === group).map((r) => `  ${r.name.padEnd(width)}  ${r.text}`);
    return lines.length ? [`${title}:`, ...lines, ""] : [];
  };
  const others = FLAGS.length - used.length;
  return [
    `kubelet ${command.name}: ${command.description}`,
    "",
    "Usage:",
    `  $ kubelet ${command.rawName} [flags]`,
    "",
    ...section("Flags", "own"),
    ...FLAG_GROUPS.flatMap(({ group, title }) => section(title, group)),
    "Flags are written with underscores (--root_dir), as the original kubelet's, or with dashes (--root-dir).",
    ...(used.length
      ? ["Each flag of a group is also a config file key (docs/configuration.md); a flag wins over the file."]
      : []),
    ...(others > 0 && wholeTable
      ? [`The ${others} other flags of \`kubelet run\` are accepted here and change nothing.`]
      : []),
  ].join("\n");
}

/** `kubelet --help`: the commands, and where to look next. */
export function globalHelp(commands: HelpCommand[]): string {
  const width = Math.max(...commands.map((c) => c.rawName.length));
  return [
    "kubelet: runs the pods of manifest files, URLs and etcd on Docker or a CRI runtime",
    "",
    "Usage:",
    "  $ kubelet <command> [flags]",
    "",
    "Commands:",
    ...commands.map((c) => `  ${c.rawName.padEnd(width)}  ${c.description}`),
    "",
    "`kubelet <command> --help` lists the flags of a command; `kubelet --version` prints the version.",
  ].join("\n");
}
