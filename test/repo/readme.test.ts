// The README's KubeletConfiguration tables are the ones the code's table generates.
import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { readmeConfigSection, readmeKeysSection } from "../../lib/config/readme.ts";

test("the README lists every KubeletConfiguration field as the code treats it (bun scripts/readme-config.ts)", () => {
  const readme = readFileSync(join(import.meta.dir, "../../README.md"), "utf8");
  expect(readme).toContain(readmeConfigSection());
});

test("the README lists every config file key with its default, as the code has them (bun scripts/readme-config.ts)", () => {
  const readme = readFileSync(join(import.meta.dir, "../../README.md"), "utf8");
  expect(readme).toContain(readmeKeysSection());
});
