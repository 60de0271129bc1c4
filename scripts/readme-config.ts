// Regenerates the configuration tables of docs/configuration.md from the tables the code uses:
// `bun scripts/readme-config.ts` (test/repo/readme.test.ts checks they are current).
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { GENERATED_DOC, regenerate } from "../lib/config/readme.ts";

const path = join(import.meta.dir, "..", GENERATED_DOC);
writeFileSync(path, regenerate(readFileSync(path, "utf8")));
