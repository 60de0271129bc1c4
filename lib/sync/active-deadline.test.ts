// activeDeadlineSeconds counted from the pod's start on the node.
import { expect, test } from "bun:test";
import { activeDeadlineRemainingMs } from "./active-deadline.ts";
import { testPod } from "../testing/pods.ts";

test("the deadline runs from the pod's start; a pod without one has none", () => {
  const pod = testPod("job", { activeDeadlineSeconds: 30 });
  expect(activeDeadlineRemainingMs(pod, 1_000, 11_000)).toBe(20_000);
  expect(activeDeadlineRemainingMs(pod, 1_000, 31_000)).toBe(0);
  expect(activeDeadlineRemainingMs(testPod("web"), 1_000, 1e9)).toBeUndefined();
});
