import { expect, test } from "bun:test";
import { testPod } from "../testing/pods.ts";
import { containerOomScoreAdj, qosClass } from "./qos.ts";

const GiB = 2 ** 30;

test("oom_score_adj follows the QoS class as the Go kubelet sets it", () => {
  const best = testPod("b");
  expect(qosClass(best)).toBe("BestEffort");
  expect(containerOomScoreAdj(best, best.spec.containers[0]!, 8 * GiB)).toBe(1000);
  const guaranteed = testPod("g");
  guaranteed.spec.containers[0]!.resources = { limits: { cpu: "1", memory: "1Gi" } };
  expect(qosClass(guaranteed)).toBe("Guaranteed");
  expect(containerOomScoreAdj(guaranteed, guaranteed.spec.containers[0]!, 8 * GiB)).toBe(-997);
  const burstable = testPod("u");
  burstable.spec.containers[0]!.resources = { requests: { memory: "2Gi" } };
  expect(qosClass(burstable)).toBe("Burstable");
  expect(containerOomScoreAdj(burstable, burstable.spec.containers[0]!, 8 * GiB)).toBe(750);
  burstable.spec.containers[0]!.resources = { requests: { memory: "8Gi" } };
  expect(containerOomScoreAdj(burstable, burstable.spec.containers[0]!, 8 * GiB)).toBe(3);
});
