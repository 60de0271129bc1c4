import { expect, test } from "bun:test";
import { createListDecoder } from "./cri-list-decoder.ts";

// A hand-made wire encoding of `ListContainersResponse { repeated Container containers = 1; }` with
// Container's id (1), state (6) and labels (8), so the test needs no protobuf library.
const varint = (n: number): number[] => {
  const out: number[] = [];
  for (; n >= 0x80; n = Math.floor(n / 128)) out.push((n % 128) | 0x80);
  return [...out, n];
};
const bytesField = (field: number, payload: number[]) => [
  ...varint(field * 8 + 2),
  ...varint(payload.length),
  ...payload,
];
const text = (s: string) => [...Buffer.from(s)];
interface Item {
  id: string;
  state: number;
  labels: Array<[string, string]>;
}
const item = ({ id, state, labels }: Item) => [
  ...bytesField(1, text(id)),
  ...(state ? [...varint(6 * 8), ...varint(state)] : []),
  ...labels.flatMap(([k, v]) => bytesField(8, [...bytesField(1, text(k)), ...bytesField(2, text(v))])),
];
const response = (items: Item[]) => Uint8Array.from(items.flatMap((i) => bytesField(1, item(i))));

/** A decoder whose item decoder reads only the id and counts its calls. */
function counting(minCapacity?: number) {
  const decodedIds: string[] = [];
  const decode = createListDecoder(
    (bytes) => {
      const id = Buffer.from(bytes.subarray(2, 2 + bytes[1]!)).toString();
      decodedIds.push(id);
      return { id, labels: { decodedAt: String(decodedIds.length) } };
    },
    { field: 1, version: [1, 6], ...(minCapacity ? { minCapacity } : {}) },
  );
  return { decode, decodedIds };
}

const a = (
  state: number,
  labels: Array<[string, string]> = [
    ["x", "1"],
    ["y", "2"],
  ],
) => ({ id: "a", state, labels });
const b = { id: "b", state: 1, labels: [["z", "3"]] as Array<[string, string]> };

test("an item listed again with the same id and state is not decoded again, even when its label order changed", () => {
  const { decode, decodedIds } = counting();
  const first = decode(response([a(1), b]));
  const second = decode(
    response([
      b,
      a(1, [
        ["y", "2"],
        ["x", "1"],
      ]),
    ]),
  );
  expect(decodedIds).toEqual(["a", "b"]);
  expect(second).toEqual([first[1]!, first[0]!]);
  expect(second[1]).toBe(first[0]!);
});

test("an item whose state changed is decoded again", () => {
  const { decode, decodedIds } = counting();
  decode(response([a(1), b]));
  decode(response([a(2), b]));
  decode(response([a(0), b]));
  expect(decodedIds).toEqual(["a", "b", "a", "a"]);
});

test("items that stopped being listed are dropped once the cache outgrows its bound, and decoded again if they return", () => {
  const { decode, decodedIds } = counting(2);
  decode(response([a(1)]));
  for (let i = 0; i < 6; i++) decode(response([{ id: `n${i}`, state: 1, labels: [] }]));
  decode(response([a(1)]));
  expect(decodedIds.filter((id) => id === "a")).toHaveLength(2);
});

test("items still listed survive the cache's turnover", () => {
  const { decode, decodedIds } = counting(2);
  for (let i = 0; i < 6; i++) decode(response([a(1), b, { id: `n${i}`, state: 1, labels: [] }]));
  expect(decodedIds.filter((id) => id === "a" || id === "b")).toEqual(["a", "b"]);
});

test("the items it shares between lists are frozen, so no caller can change what the next list returns", () => {
  const { decode } = counting();
  const [shared] = decode(response([a(1)])) as Array<{ labels: Record<string, string> }>;
  expect(() => {
    shared!.labels.extra = "1";
  }).toThrow();
});

test("an empty response is an empty list, and a truncated one is an error naming the CRI list", () => {
  const { decode } = counting();
  expect(decode(new Uint8Array())).toEqual([]);
  expect(() => decode(response([a(1)]).subarray(0, 5))).toThrow("cannot decode a CRI list response: truncated");
});
