import { expect, test } from "bun:test";
import { isApiError } from "./api-status.ts";
import { encodeContinue, INCONSISTENT_CONTINUE } from "./continue-token.ts";
import { listChunk, sortedSnapshot, type ChunkSource } from "./list-chunk.ts";

/** A token resuming at `start` (relative to the list) of the list read at `revision`. */
const token = (start: string, revision: number) => encodeContinue(`/${start}`, "/", revision);

/** Objects named by key; revision 5 is now, revision 3 (without "c") is still kept, older ones are not. */
const snapshot = (revision: number, keys: string[]) => sortedSnapshot(revision, keys, (key) => key);
const source: ChunkSource<string> = {
  current: () => snapshot(5, ["d", "a", "c", "b", "e"]),
  at: (revision) =>
    revision === 5
      ? snapshot(5, ["d", "a", "c", "b", "e"])
      : revision === 3
        ? snapshot(3, ["a", "b", "d", "e"])
        : undefined,
};
const page = (query: Record<string, string>, matches?: (key: string) => boolean, maxUnpaged?: number) =>
  listChunk(source, query, { matches, maxUnpaged });

function refusal(run: () => unknown): { code: number; reason: string; message: string; metadata: any } {
  try {
    run();
  } catch (error) {
    if (isApiError(error)) return error.status as any;
    throw error;
  }
  throw new Error("expected a refusal");
}

test("without a limit every matching object comes back in key order and no token", () => {
  expect(page({})).toEqual({ items: ["a", "b", "c", "d", "e"], revision: 5 });
});

test("a limit gives that many objects, a token resuming after the last, and the count left", () => {
  const first = page({ limit: "2" });
  expect(first).toEqual({
    items: ["a", "b"],
    revision: 5,
    continue: token("b\u0000", 5),
    remainingItemCount: 3,
  });
  const second = page({ limit: "2", continue: first.continue! });
  expect([second.items, second.remainingItemCount]).toEqual([["c", "d"], 1]);
  const last = page({ limit: "2", continue: second.continue! });
  expect(last).toEqual({ items: ["e"], revision: 5 });
});

test("following the tokens visits each object once, whatever the limit", () => {
  for (const limit of ["1", "2", "3", "4", "5", "9"]) {
    const seen: string[] = [];
    let token: string | undefined;
    // Bounded, so a token that never advances fails the test instead of hanging it.
    for (let pages = 0; pages < 10; pages++) {
      const next = page({ limit, ...(token ? { continue: token } : {}) });
      seen.push(...next.items);
      token = next.continue;
      if (!token) break;
    }
    expect(seen).toEqual(["a", "b", "c", "d", "e"]);
  }
});

test("a continued list reads the snapshot its first page was read at", () => {
  const next = page({ limit: "2", continue: token("a\u0000", 3) });
  expect([next.items, next.revision]).toEqual([["b", "d"], 3]);
});

test("with a selector the page holds only matches and no remainingItemCount", () => {
  const vowels = (key: string) => key === "a" || key === "e";
  const first = page({ limit: "1" }, vowels);
  expect([first.items, first.remainingItemCount, first.continue !== undefined]).toEqual([["a"], undefined, true]);
  expect(page({ limit: "1", continue: first.continue! }, vowels).items).toEqual(["e"]);
});

test("a token whose snapshot is gone is 410 Expired with a token to finish against the current state", () => {
  const status = refusal(() => page({ limit: "2", continue: token("b\u0000", 1) }));
  expect([status.code, status.reason, status.message]).toEqual([410, "Expired", INCONSISTENT_CONTINUE]);
  expect(status.metadata.continue).toBe(token("b\u0000", -1));
  expect(page({ continue: status.metadata.continue }).items).toEqual(["c", "d", "e"]);
});

test("a malformed token, a resourceVersion beside a token and a bad limit are 400s in upstream's words", () => {
  const bad = refusal(() => page({ continue: "%%%" }));
  expect([bad.code, bad.reason, bad.message]).toEqual([
    400,
    "BadRequest",
    "invalid continue token: continue key is not valid: illegal base64 data at input byte 0",
  ]);
  const both = refusal(() => page({ continue: token("a\u0000", 5), resourceVersion: "5" }));
  expect([both.code, both.message]).toEqual([400, "specifying resource version is not allowed when using continue"]);
  expect(page({ continue: token("c\u0000", 5), resourceVersion: "0" }).items).toEqual(["d", "e"]);
  expect(refusal(() => page({ limit: "1e3" })).message).toBe(
    'limit: Invalid value: "1e3": strconv.ParseInt: parsing "1e3": invalid syntax',
  );
  expect(refusal(() => page({ limit: "two" })).code).toBe(400);
});

/** Keys namespace/name across three namespaces, where "a-b" sorts between "a" and "a/…"'s neighbours. */
const namespaced: ChunkSource<string> = {
  current: () => snapshot(7, ["b/x", "a/z", "a/y", "c/w", "a-b/v", "ab/u"]),
  at: (revision) => (revision === 7 ? namespaced.current() : undefined),
};

test("a namespace's pages cover its own keys only, with tokens relative to the namespace as upstream's", () => {
  const first = listChunk(namespaced, { limit: "1" }, { scope: "a/" });
  expect([first.items, first.remainingItemCount]).toEqual([["a/y"], 1]);
  expect(first.continue).toBe(encodeContinue("/a/y\u0000", "/a/", 7));
  const last = listChunk(namespaced, { limit: "1", continue: first.continue! }, { scope: "a/" });
  expect(last).toEqual({ items: ["a/z"], revision: 7 });
});

test("resourceVersion=0, or no more objects in scope than maxUnpaged, answers the first page whole", () => {
  expect(page({ limit: "2", resourceVersion: "0" })).toEqual({ items: ["a", "b", "c", "d", "e"], revision: 5 });
  expect(page({ limit: "2" }, undefined, 5).items).toHaveLength(5);
  expect(page({ limit: "2" }, undefined, 4).items).toEqual(["a", "b"]);
  expect(listChunk(namespaced, { limit: "1" }, { scope: "a/", maxUnpaged: 2 }).items).toEqual(["a/y", "a/z"]);
});
