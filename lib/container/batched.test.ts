import { expect, test } from "bun:test";
import { batched } from "./batched.ts";

const missing = (key: string) => new Error(`no ${key}`);

test("lookups made in the same turn share one fetch; a later turn makes its own", async () => {
  const fetches: string[][] = [];
  const lookup = batched(async (keys: string[]) => {
    fetches.push(keys);
    return new Map(keys.map((k) => [k, k.toUpperCase()]));
  }, missing);
  expect(await Promise.all([lookup("a"), lookup("b"), lookup("a")])).toEqual(["A", "B", "A"]);
  expect(await lookup("c")).toBe("C");
  expect(fetches).toEqual([["a", "b"], ["c"]]);
});

test("a key the fetch does not answer is missing, and a failed fetch rejects every lookup it served", async () => {
  const partial = batched(async () => new Map([["a", 1]]), missing);
  const [a, b] = await Promise.allSettled([partial("a"), partial("b")]);
  expect(a).toEqual({ status: "fulfilled", value: 1 });
  expect(b).toMatchObject({ status: "rejected", reason: { message: "no b" } });
  const failing = batched(async (): Promise<Map<string, number>> => Promise.reject(new Error("down")), missing);
  const results = await Promise.allSettled([failing("a"), failing("b")]);
  expect(results.map((r) => (r as PromiseRejectedResult).reason.message)).toEqual(["down", "down"]);
});
