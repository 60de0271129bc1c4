// The hostile-input corpus of testdata/hostile/: each case with the error it must produce. Cases
// too large to commit ("generated:…") are built here, byte for byte the same on every run.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

export interface HostileCase {
  /** File name in testdata/hostile/, or `generated:<name>` for a case built by hostileBytes. */
  file: string;
  /** The start of the formatted issue it must produce (`path: Type: …`). */
  error: string;
}

export const HOSTILE_DIR = join(import.meta.dir, "../../testdata/hostile");

const GENERATED: Record<string, () => Buffer> = {
  // The 40 MB manifest of the issue: one valid-looking pod whose image is the whole file.
  "huge-image.yaml": () =>
    Buffer.concat([
      Buffer.from(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: huge}\nspec:\n  containers:\n  - name: app\n    image: ",
      ),
      Buffer.alloc(40 * 2 ** 20, "a"),
      Buffer.from("\n"),
    ]),
};

export function hostileCases(): HostileCase[] {
  return JSON.parse(readFileSync(join(HOSTILE_DIR, "cases.json"), "utf8")) as HostileCase[];
}

/** The file name a case is written under. */
export function hostileName(c: HostileCase): string {
  return c.file.replace(/^generated:/, "");
}

export function hostileBytes(c: HostileCase): Buffer {
  const generate = c.file.startsWith("generated:") ? GENERATED[hostileName(c)] : undefined;
  if (c.file.startsWith("generated:") && !generate) throw new Error(`no generator for ${c.file}`);
  return generate ? generate() : readFileSync(join(HOSTILE_DIR, c.file));
}

/** Writes every case into `dir`; returns the cases. */
export function writeHostileCorpus(dir: string): HostileCase[] {
  const cases = hostileCases();
  for (const c of cases) writeFileSync(join(dir, hostileName(c)), hostileBytes(c));
  return cases;
}
