import { describe, expect, test } from "bun:test";
import { statusFor } from "./api-status.ts";
import { fieldSelector, labelSelector, parseFieldSelector, parseLabelSelector, select } from "./selectors.ts";

const labels = { app: "web", tier: "front", replicas: "3" };

test.each([
  ["", true],
  ["app=web", true],
  ["app==web", true],
  ["app!=web", false],
  ["app=db", false],
  ["app in (web, db)", true],
  ["app notin (web)", false],
  ["app notin (db)", true],
  ["missing notin (db)", true],
  ["missing!=x", true],
  ["tier", true],
  ["!tier", false],
  ["!missing", true],
  ["replicas>2", true],
  ["replicas<3", false],
  ["app=web,tier=front", true],
  ["app=web, tier=back", false],
  ["app in (web,db),!missing,tier", true],
  ["example.com/role", false],
])("label selector %p matches {app=web,tier=front,replicas=3}: %p", (selector, expected) => {
  expect(parseLabelSelector(selector).matches(labels)).toBe(expected);
});

test.each([
  ["app=a b", "unable to parse requirement"],
  ["app in (web", "unable to parse requirement"],
  ["-bad-=x", "unable to parse requirement"],
  ["replicas>x", "the value must be an integer"],
  ["app=web,", "unable to parse requirement"],
])("a bad label selector %p is a 400 saying %p", (selector, said) => {
  let caught: { status?: { code: number; message: string } } | undefined;
  try {
    parseLabelSelector(selector);
  } catch (error) {
    caught = error as typeof caught;
  }
  expect(caught?.status?.code).toBe(400);
  expect(caught?.status?.message).toContain(said);
});

const fields = ["metadata.name", "status.phase"];

test.each([
  ["metadata.name=web", true],
  ["metadata.name==web", true],
  ["metadata.name!=web", false],
  ["metadata.name=web,status.phase=Running", true],
  ["metadata.name=web,status.phase!=Running", false],
  ["status.phase=Pending", false],
])("field selector %p matches web/Running: %p", (selector, expected) => {
  expect(parseFieldSelector(selector, fields).matches({ "metadata.name": "web", "status.phase": "Running" })).toBe(
    expected,
  );
});

test("a field the resource does not make selectable is refused with upstream's words", () => {
  expect(() => parseFieldSelector("spec.foo=bar", fields)).toThrow("field label not supported: spec.foo");
});

test("escaped commas and equals signs in a field value are part of the value", () => {
  expect(parseFieldSelector("metadata.name=a\\,b\\=c", fields).matches({ "metadata.name": "a,b=c" })).toBe(true);
});

describe("filters over a resource's objects (what every list but the pods' uses)", () => {
  const objects: Array<{ metadata: { name: string; labels?: Record<string, string> } }> = [
    { metadata: { name: "a", labels: { app: "web", tier: "front", replicas: "3" } } },
    { metadata: { name: "b", labels: { app: "db" } } },
    { metadata: { name: "c" } },
  ];
  const names = (list: typeof objects) => list.map((o) => o.metadata.name);
  const byLabels = (text: string) => names(select(objects, labelSelector(text)));
  const fields = { "metadata.name": (o: (typeof objects)[number]) => o.metadata.name };
  const refusal = (run: () => unknown) => {
    try {
      run();
    } catch (error) {
      return statusFor(error as Error) as { code: number; reason: string; message: string };
    }
    throw new Error("expected a refusal");
  };

  test("a label filter has the full grammar: =, ==, !=, in, notin, key, !key, gt and lt", () => {
    expect(byLabels("app=web")).toEqual(["a"]);
    expect(byLabels("app==db")).toEqual(["b"]);
    expect(byLabels("app!=web")).toEqual(["b", "c"]);
    expect(byLabels("app in (web, db)")).toEqual(["a", "b"]);
    expect(byLabels("app notin (web)")).toEqual(["b", "c"]);
    expect(byLabels("tier")).toEqual(["a"]);
    expect(byLabels("app in (web,db),!tier")).toEqual(["b"]);
    expect(byLabels("replicas>2")).toEqual(["a"]);
    expect(byLabels("")).toEqual(["a", "b", "c"]);
  });

  test("a field filter matches with =, == and != over the fields the resource names", () => {
    expect(names(select(objects, fieldSelector("metadata.name=a", fields)))).toEqual(["a"]);
    expect(names(select(objects, fieldSelector("metadata.name==b", fields)))).toEqual(["b"]);
    expect(names(select(objects, fieldSelector("metadata.name!=a,metadata.name!=b", fields)))).toEqual(["c"]);
  });

  test("bad selectors reach the client as 400 BadRequest Statuses in upstream's words, not 500s", () => {
    expect(refusal(() => fieldSelector("spec.nodeName=x", fields))).toMatchObject({
      code: 400,
      reason: "BadRequest",
      message: "field label not supported: spec.nodeName",
    });
    const label = refusal(() => labelSelector("app=b=c"));
    expect([label.code, label.reason]).toEqual([400, "BadRequest"]);
    expect(label.message).toStartWith('unable to parse requirement: values[0]: Invalid value: "b=c"');
  });
});
