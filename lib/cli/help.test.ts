import { describe, expect, test } from "bun:test";
import { PassThrough } from "node:stream";
import { DEFAULT_CONFIG } from "../config/config-types.ts";
import { FLAGS } from "../config/flags.ts";
import { settingText } from "../config/print-config.ts";
import { main } from "./cli.ts";
import { commandFlags, FLAG_GROUPS, flagGroup } from "./command-flags.ts";
import { docSpelling } from "./help.ts";

async function help(...argv: string[]) {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let out = "";
  stdout.on("data", (d) => (out += d));
  const code = await main(argv, {
    env: { KUBELET_CONFIG_FILE: "" },
    stdout,
    stderr,
    readStdin: async () => "",
    exit: () => {},
  });
  return { code, out };
}

/** The help text's sections: each heading (up to its colon or its parenthesis) and its flag lines. */
function sections(text: string): Map<string, string[]> {
  const result = new Map<string, string[]>();
  let current: string[] | undefined;
  for (const line of text.split("\n")) {
    if (/^\S.*:$/.test(line)) result.set(line.replace(/( \(.*)?:$/, ""), (current = []));
    else if (line.startsWith("  ") && current) current.push(line);
    else current = undefined;
  }
  return result;
}

/** Every flag line of the help text: its section, its long name as printed, and the line. */
function flagLines(text: string) {
  return [...sections(text)].flatMap(([section, lines]) =>
    lines.flatMap((line) => {
      const name = /^ {2}(?:-\w, )?--([a-z0-9_-]+)/.exec(line)?.[1];
      return name ? [{ section, name, line }] : [];
    }),
  );
}

const TITLE = Object.fromEntries(FLAG_GROUPS.map((g) => [g.group, g.title.split(" (")[0]!]));
const COMMANDS = [
  "run",
  "runonce",
  "plan",
  "reset",
  "print-config",
  "validate",
  "fleet",
  "kubeconfig",
  "get",
  "describe",
];

describe("--help", () => {
  for (const command of COMMANDS)
    test(`${command} --help lists every flag it uses once, with its default, under its group, spelled with underscores`, async () => {
      const { code, out } = await help(command, "--help");
      expect(code).toBe(0);
      const lines = flagLines(out);
      const uses = commandFlags(command);
      for (const spec of uses) {
        const listed = lines.filter((l) => l.name === spec.flag);
        expect({ flag: spec.flag, sections: listed.map((l) => l.section) }).toEqual({
          flag: spec.flag,
          sections: [TITLE[flagGroup(spec.flag)]!],
        });
        expect(listed[0]!.line).toEndWith(`(default: ${settingText(spec, DEFAULT_CONFIG[spec.key])})`);
      }
      const table = (name: string) => FLAGS.some((f) => f.flag === name.replace(/-/g, "_"));
      // No flag of the table in its dash spelling, and none of the table it does not use in a group.
      expect(lines.filter((l) => table(l.name) && l.name.includes("-")).map((l) => l.name)).toEqual([]);
      expect(
        lines.filter((l) => l.section !== "Flags" && !uses.some((spec) => spec.flag === l.name)).map((l) => l.name),
      ).toEqual([]);
    });

  test("reset --help lists a few runtime and node flags, not run's ~95", async () => {
    const { out } = await help("reset", "--help");
    expect(out).toContain("--root_dir <value>");
    expect(out).toMatch(/--root_dir <value> +Directory path .* \(default: \/var\/lib\/kubelet\)$/m);
    expect(out).not.toContain("--port ");
    expect(out).not.toContain("--manifest_url");
    expect(out.split("\n").filter((line) => /^ {2}(-\w, )?--/.test(line)).length).toBeLessThan(25);
    expect(out).toContain(
      `The ${FLAGS.length - commandFlags("reset").length} other flags of \`kubelet run\` are accepted here and change nothing.`,
    );
  });

  test("a command's own flags are listed with their defaults, --config_file in the docs' spelling", async () => {
    const { out } = await help("print-config", "--help");
    const own = sections(out).get("Flags")!;
    expect(own.some((line) => /--config_file <path> +YAML configuration file/.test(line))).toBe(true);
    expect(own.some((line) => /-o, --output <format> +yaml or json \(default: yaml\)$/.test(line))).toBe(true);
    expect(own.some((line) => line.includes("--show-origin"))).toBe(true);
  });

  test("kubelet --help and kubelet alone list every command; alone exits 2", async () => {
    const { code, out } = await help("--help");
    expect(code).toBe(0);
    for (const command of COMMANDS) expect(out).toMatch(new RegExp(`^  ${command}\\b`, "m"));
    expect((await help()).code).toBe(2);
  });
});

describe("docSpelling", () => {
  test("writes the table's flags and --config_file with underscores, and leaves a command's own options as they are", () => {
    expect(docSpelling("--config-file <path>")).toBe("--config_file <path>");
    expect(docSpelling("--allow-sensitive-host-paths")).toBe("--allow_sensitive_host_paths");
    expect(docSpelling("--dry-run")).toBe("--dry-run");
    expect(docSpelling("-o, --output <format>")).toBe("-o, --output <format>");
  });
});
