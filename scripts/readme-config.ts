// Regenerates the README's configuration tables from the tables the code uses:
// `bun scripts/readme-config.ts` (test/repo/readme.test.ts checks they are current).
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { README_SECTIONS } from "../lib/config/readme.ts";

const path = join(import.meta.dir, "../README.md");
let text = readFileSync(path, "utf8");
for (const section of README_SECTIONS) {
  const start = text.indexOf(section.start);
  const end = text.indexOf(section.end);
  if (start < 0 || end < 0) throw new Error(`README.md lacks ${section.start} … ${section.end}`);
  text = text.slice(0, start) + section.render() + text.slice(end + section.end.length);
}
writeFileSync(path, text);
