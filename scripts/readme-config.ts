// Regenerates the README's KubeletConfiguration tables from the table the code uses:
// `bun scripts/readme-config.ts` (test/repo/readme.test.ts checks they are current).
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { README_MARKERS, readmeConfigSection } from "../lib/config/readme.ts";

const path = join(import.meta.dir, "../README.md");
const text = readFileSync(path, "utf8");
const start = text.indexOf(README_MARKERS.start);
const end = text.indexOf(README_MARKERS.end);
if (start < 0 || end < 0) throw new Error(`README.md lacks ${README_MARKERS.start} … ${README_MARKERS.end}`);
writeFileSync(path, text.slice(0, start) + readmeConfigSection() + text.slice(end + README_MARKERS.end.length));
