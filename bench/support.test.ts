// bench/support.ts's helpers that decide what a bench measures.
import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { unitEnvironment } from "./support.ts";

test("a bench's kubelet runs with every Environment= line of the unit install.sh writes, and nothing else", () => {
  const script = readFileSync(join(import.meta.dir, "..", "install.sh"), "utf8");
  const lines = script.split("\n").filter((line) => line.startsWith("Environment="));
  expect(lines.length).toBeGreaterThan(0);
  const expected = Object.fromEntries(
    lines.map((line) => line.slice("Environment=".length).split(/=(.*)/s).slice(0, 2)),
  );
  expect(unitEnvironment()).toEqual(expected);
  expect(unitEnvironment()).toEqual({ BUN_JSC_useDFGJIT: "0" });
});
