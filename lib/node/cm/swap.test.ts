import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { checkSwap, swapAreas } from "./swap.ts";

const dir = mkdtempSync(join(tmpdir(), "swap-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const HEADER = "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n";
const procSwaps = (text: string) => {
  const path = join(dir, `swaps-${Math.random()}`);
  writeFileSync(path, text);
  return path;
};

test("/proc/swaps with only its header lists no swap area", () => {
  expect(swapAreas(HEADER)).toEqual([]);
  expect(swapAreas(`${HEADER}/swapfile  file  1048572  0  -2\n`)).toEqual(["/swapfile  file  1048572  0  -2"]);
});

test("with swap on and failSwapOn the start is refused, naming the setting and the swap areas", async () => {
  const path = procSwaps(`${HEADER}/dev/loop7  partition  16380  0  -2\n`);
  const refused = await checkSwap(true, path).catch((error) => error);
  expect(refused.code).toBe("SwapOn");
  expect(refused.message).toBe(
    `running with swap on is not supported, please disable swap or set --fail_swap_on=false (failSwapOn: false in the config file). ${path} contained: [/dev/loop7  partition  16380  0  -2]`,
  );
});

test("failSwapOn false starts with swap on; no swap, or no /proc/swaps, starts either way", async () => {
  await expect(checkSwap(false, procSwaps(`${HEADER}/swapfile file 1 0 -2\n`))).resolves.toBeUndefined();
  await expect(checkSwap(true, procSwaps(HEADER))).resolves.toBeUndefined();
  await expect(checkSwap(true, join(dir, "missing"))).resolves.toBeUndefined();
});
