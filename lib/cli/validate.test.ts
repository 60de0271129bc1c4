import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { hostileName, writeHostileCorpus } from "../testing/hostile.ts";
import { validateCommand } from "./validate.ts";

const dir = mkdtempSync(join(tmpdir(), "kubelet-validate-hostile-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

test("validate over the hostile corpus names every file with its error and exits 1", async () => {
  const cases = writeHostileCorpus(dir);
  const out = new PassThrough();
  let text = "";
  out.on("data", (d) => (text += d));
  const code = await validateCommand([dir], {
    allowPrivileged: false,
    format: "text",
    out,
    readStdin: async () => "",
  });
  expect(code).toBe(1);
  const lines = text.split("\n");
  for (const c of cases) {
    const file = join(dir, hostileName(c));
    expect({ file: c.file, named: lines.some((line) => line.includes(file) && line.includes(c.error)) }).toEqual({
      file: c.file,
      named: true,
    });
  }
});
