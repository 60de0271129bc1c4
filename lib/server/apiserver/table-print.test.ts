import { describe, expect, test } from "bun:test";
import { age, rfc3339, toTable } from "./table-print.ts";
import { humanDuration, wantsTable } from "./table.ts";

describe("humanDuration", () => {
  test("prints ages as apimachinery's HumanDuration does", () => {
    const s = 1000;
    const m = 60 * s;
    const h = 60 * m;
    const d = 24 * h;
    const cases: Array<[number, string]> = [
      [-3 * s, "<invalid>"],
      [-1 * s, "0s"],
      [0, "0s"],
      [119 * s, "119s"],
      [2 * m, "2m"],
      [3 * m + 12 * s, "3m12s"],
      [10 * m + 30 * s, "10m"],
      [179 * m, "179m"],
      [3 * h, "3h"],
      [5 * h + 2 * m, "5h2m"],
      [47 * h, "47h"],
      [3 * d, "3d"],
      [3 * d + 4 * h, "3d4h"],
      [400 * d, "400d"],
      [3 * 365 * d + 30 * d, "3y30d"],
      [9 * 365 * d, "9y"],
    ];
    expect(cases.map(([ms]) => humanDuration(ms))).toEqual(cases.map(([, text]) => text));
  });

  test("an object without a creation time is <unknown>", () => {
    expect(age(undefined, 0)).toBe("<unknown>");
    expect(age("2026-01-01T00:00:00Z", Date.parse("2026-01-01T00:00:45Z"))).toBe("45s");
  });
});

describe("rfc3339", () => {
  test("writes times as metav1.Time does, to the second", () => {
    expect(rfc3339("2026-01-01T00:00:05.678Z")).toBe("2026-01-01T00:00:05Z");
    expect(rfc3339(Date.parse("2026-01-01T00:00:05Z"))).toBe("2026-01-01T00:00:05Z");
  });
});

describe("Tables", () => {
  test("kubectl's Accept header asks for a Table; a plain JSON one does not", () => {
    expect(
      wantsTable(
        "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json",
      ),
    ).toBe(true);
    expect(wantsTable("application/json")).toBe(false);
    expect(wantsTable(undefined)).toBe(false);
  });

  test("each row carries its object as PartialObjectMetadata by default, the whole object or none when asked", () => {
    const objects = [{ metadata: { name: "a", namespace: "ns" }, data: { secret: "x" } }];
    const cells = (o: { metadata: { name: string } }) => [o.metadata.name];
    const columns = [{ name: "Name", type: "string" as const }];
    expect(toTable(columns, objects, cells).rows[0]).toEqual({
      cells: ["a"],
      object: { kind: "PartialObjectMetadata", apiVersion: "meta.k8s.io/v1", metadata: { name: "a", namespace: "ns" } },
    });
    expect(toTable(columns, objects, cells, { includeObject: "Object" }).rows[0]!.object).toBe(objects[0]!);
    expect(toTable(columns, objects, cells, { includeObject: "None" }).rows[0]).toEqual({ cells: ["a"] });
    expect(toTable(columns, objects, cells).columnDefinitions).toEqual([
      { name: "Name", type: "string", format: "", description: "", priority: 0 },
    ]);
  });
});
