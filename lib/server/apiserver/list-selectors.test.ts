import { describe, expect, test } from "bun:test";
import { fieldSelector, labelSelector, select } from "./list-selectors.ts";

const objects: Array<{ metadata: { name: string; labels?: Record<string, string> } }> = [
  { metadata: { name: "a", labels: { app: "web", tier: "front" } } },
  { metadata: { name: "b", labels: { app: "db" } } },
  { metadata: { name: "c" } },
];
const names = (list: typeof objects) => list.map((o) => o.metadata.name);
const byLabels = (text: string) => names(select(objects, labelSelector(text)));

describe("label selectors", () => {
  test("match with =, ==, !=, in, notin, a key and !key, every term at once", () => {
    expect(byLabels("app=web")).toEqual(["a"]);
    expect(byLabels("app==db")).toEqual(["b"]);
    expect(byLabels("app!=web")).toEqual(["b", "c"]);
    expect(byLabels("app in (web, db)")).toEqual(["a", "b"]);
    expect(byLabels("app notin (web)")).toEqual(["b", "c"]);
    expect(byLabels("tier")).toEqual(["a"]);
    expect(byLabels("!tier")).toEqual(["b", "c"]);
    expect(byLabels("app in (web,db),!tier")).toEqual(["b"]);
    expect(byLabels("")).toEqual(["a", "b", "c"]);
  });

  test("an unparsable requirement is a 400 naming it", () => {
    expect(() => labelSelector("app=b=c")).toThrow('unable to parse requirement: invalid label selector "app=b=c"');
  });
});

describe("field selectors", () => {
  const fields = { "metadata.name": (o: (typeof objects)[number]) => o.metadata.name };

  test("match with =, == and !=", () => {
    expect(names(select(objects, fieldSelector("metadata.name=a", fields)))).toEqual(["a"]);
    expect(names(select(objects, fieldSelector("metadata.name==b", fields)))).toEqual(["b"]);
    expect(names(select(objects, fieldSelector("metadata.name!=a,metadata.name!=b", fields)))).toEqual(["c"]);
  });

  test("a field the resource does not support is refused with upstream's words", () => {
    expect(() => fieldSelector("spec.nodeName=x", fields)).toThrow("field label not supported: spec.nodeName");
  });
});
