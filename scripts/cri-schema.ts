// Regenerates lib/container/cri/cri-schema.ts from lib/container/cri/cri-proto.ts: `bun scripts/cri-schema.ts`
// after editing the .proto text (lib/container/cri/cri-codec.test.ts checks the two agree).
import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { criSchemaSource } from "./cri-schema-gen.ts";

const root = join(import.meta.dir, "..");
const path = join(root, "lib/container/cri/cri-schema.ts");
writeFileSync(path, criSchemaSource());
const format = spawnSync(join(root, "node_modules/.bin/biome"), ["format", "--write", path], { stdio: "inherit" });
if (format.status !== 0) throw new Error(`biome format ${path} exited ${format.status}`);
