import { expect, test } from "bun:test";
import { testPod } from "../testing/pods.ts";
import { containerOomScoreAdj, podQosClass } from "./qos.ts";

const GiB = 2 ** 30;
const pod = (resources: Record<string, Record<string, string>>) =>
  testPod("p", { containers: [{ name: "app", image: "x", resources }] });

test("QoS class and oom_score_adj follow the kubelet: Guaranteed -997, BestEffort 1000, Burstable by memory request", () => {
  const guaranteed = pod({ limits: { cpu: "1", memory: "1Gi" } });
  const burstable = pod({ requests: { memory: "1Gi" } });
  const bestEffort = pod({});
  expect([guaranteed, burstable, bestEffort].map(podQosClass)).toEqual(["Guaranteed", "Burstable", "BestEffort"]);
  expect(containerOomScoreAdj(guaranteed, guaranteed.spec.containers[0]!, 4 * GiB)).toBe(-997);
  expect(containerOomScoreAdj(bestEffort, bestEffort.spec.containers[0]!, 4 * GiB)).toBe(1000);
  expect(containerOomScoreAdj(burstable, burstable.spec.containers[0]!, 4 * GiB)).toBe(750);
  // a tiny request would round to BestEffort's 1000: the kubelet keeps Burstable at 999
  const tiny = pod({ requests: { memory: "1Ki" } });
  expect(containerOomScoreAdj(tiny, tiny.spec.containers[0]!, 4 * GiB)).toBe(999);
  // a request of all memory stays above Guaranteed
  const huge = pod({ requests: { memory: "4Gi" }, limits: { cpu: "1" } });
  expect(containerOomScoreAdj(huge, huge.spec.containers[0]!, 4 * GiB)).toBe(3);
});
