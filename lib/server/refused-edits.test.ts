import { expect, test } from "bun:test";
import { ANNOTATION } from "../api/types.ts";
import { testPod } from "../testing/pods.ts";
import { withRefusedEdits } from "./refused-edits.ts";

test("a pod whose edit was refused is served with why in kubelet.io/refused-edit; the others are the same objects", () => {
  const web = testPod("web");
  const db = testPod("db");
  const why = "web.yaml[0]: spec.containers[0].comand: Unknown field: unknown field (did you mean command?)";
  const served = withRefusedEdits([web, db], new Map([["default/web", why]]));
  expect(served[0]!.metadata.annotations[ANNOTATION.refusedEdit]).toBe(why);
  expect(served[0]!.spec).toBe(web.spec);
  expect(web.metadata.annotations[ANNOTATION.refusedEdit]).toBeUndefined();
  expect(served[1]).toBe(db);
});

test("with no refused edit the list itself is served as it is", () => {
  const pods = [testPod("web")];
  expect(withRefusedEdits(pods, new Map())).toBe(pods);
});
