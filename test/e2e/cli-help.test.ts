// The compiled binary's --help: each command lists the flags it uses, with defaults, in the docs' spelling.
import { describe, expect, test } from "bun:test";
import { commandFlags } from "../../lib/cli/command-flags.ts";
import { runBinary } from "./harness.ts";

const flagLines = (text: string) => text.split("\n").filter((line) => /^ {2}(-\w, )?--[a-z]/.test(line));

describe("the compiled binary's --help", () => {
  for (const command of ["reset", "runonce"])
    test(`${command} --help lists the flags ${command} uses, each with its default, as --root_dir`, () => {
      const { code, stdout } = runBinary([command, "--help"]);
      expect(code).toBe(0);
      expect(stdout).toMatch(/^ {2}--root_dir <value> +.*\(default: \/var\/lib\/kubelet\)$/m);
      const lines = flagLines(stdout);
      expect(lines.filter((line) => line.includes("--root-dir"))).toEqual([]);
      expect(lines.filter((line) => line.startsWith("  --port "))).toEqual([]);
      const listed = lines.map((line) => /--([a-z0-9_]+)/.exec(line)![1]);
      for (const spec of commandFlags(command)) expect(listed).toContain(spec.flag);
      const own = command === "reset" ? 3 : 2; // --config_file, -h (and reset's --dry-run)
      expect(lines).toHaveLength(commandFlags(command).length + own);
      for (const line of lines.slice(own)) expect(line).toMatch(/\(default: .*\)$/);
    });

  test("runonce's help and its unknown-flag error are the same when only its own options are built as with all (a flag first)", () => {
    // `--config_file=` first (no file) builds every command's options, as before start-up built only the invoked one's.
    for (const args of [["--help"], ["--sync_frequncy=1s"]]) {
      const own = runBinary(["runonce", ...args]);
      const all = runBinary(["--config_file=", "runonce", ...args]);
      expect([own.code, own.stdout, own.stderr]).toEqual([all.code, all.stdout, all.stderr]);
    }
    expect(runBinary(["runonce", "--sync_frequncy=1s"]).stderr).toContain("did you mean --sync_frequency?");
  });
});
