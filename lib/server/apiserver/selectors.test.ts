import { expect, test } from "bun:test";
import { parseFieldSelector, parseLabelSelector } from "./selectors.ts";

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
