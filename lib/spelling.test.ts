import { expect, test } from "bun:test";
import { closestName } from "./spelling.ts";

test("a name one letter off finds the known name, whatever its case", () => {
  expect(closestName("comand", ["args", "command"])).toBe("command");
  expect(closestName("IMAGE", ["image"])).toBe("image");
});

test("a short name finds a known name at most two edits away, and nothing further", () => {
  expect(closestName("abc", ["axy"])).toBe("axy");
  expect(closestName("abc", ["xyz"])).toBeUndefined();
  expect(closestName("abc", [])).toBeUndefined();
});

test("a longer name allows one edit per three letters: added, dropped or changed", () => {
  expect(closestName("abcdefghijkl", ["abcdefghijklmnop"])).toBe("abcdefghijklmnop");
  expect(closestName("abcdefghijkl", ["abcdefghijklmnopq"])).toBeUndefined();
  expect(closestName("abcdefghijkl", ["abcdefgh"])).toBe("abcdefgh");
  expect(closestName("abcdefghijkl", ["abcdefg"])).toBeUndefined();
  expect(closestName("abcdefghijkl", ["abcdefghwxyz"])).toBe("abcdefghwxyz");
  expect(closestName("abcdefghijkl", ["abcdefgvwxyz"])).toBeUndefined();
});

test("the closest of several names wins, and of equally close ones the first listed", () => {
  expect(closestName("hostnetwork", ["hostPID", "hostNetwork", "hostIPC"])).toBe("hostNetwork");
  expect(closestName("cat", ["bat", "hat"])).toBe("bat");
});
