import { expect, test } from "bun:test";
import { testPod } from "../testing/pods.ts";
import { containerOomScoreAdj, podQosClass, podTotals } from "./qos.ts";

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

const withInits = (initContainers: Array<[string, string, boolean]>) =>
  testPod("p", {
    containers: [{ name: "app", image: "x", resources: { requests: { cpu: "100m", memory: "100Mi" } } }],
    initContainers: initContainers.map(([name, memory, sidecar]) => ({
      name,
      image: "x",
      resources: { requests: { cpu: "100m", memory } },
      ...(sidecar ? { restartPolicy: "Always" } : {}),
    })),
  });
const MiB = 2 ** 20;

test("pod totals: sidecars add to the app containers' requests; a regular init container counts with the sidecars before it", () => {
  // app 100Mi + sidecar 50Mi = 150Mi, above the init container beside the sidecar (80Mi + 50Mi)
  expect(
    podTotals(
      withInits([
        ["proxy", "50Mi", true],
        ["init", "80Mi", false],
      ]),
    ).requests,
  ).toEqual({
    cpu: 200,
    memory: 150 * MiB,
  });
  // the init container runs beside the sidecar started before it: 50Mi + 200Mi = 250Mi
  expect(
    podTotals(
      withInits([
        ["proxy", "50Mi", true],
        ["init", "200Mi", false],
      ]),
    ).requests.memory,
  ).toBe(250 * MiB);
  // an init container before the sidecar runs alone: max(200Mi, 100Mi + 50Mi)
  expect(
    podTotals(
      withInits([
        ["init", "200Mi", false],
        ["proxy", "50Mi", true],
      ]),
    ).requests.memory,
  ).toBe(200 * MiB);
});

test("a sidecar's oom_score_adj is no higher than the app container's with the smallest memory request", () => {
  const p = withInits([["proxy", "10Mi", true]]);
  const [proxy] = p.spec.initContainers!;
  expect(containerOomScoreAdj(p, proxy!, 1000 * MiB)).toBe(containerOomScoreAdj(p, p.spec.containers[0]!, 1000 * MiB));
  const init = withInits([["init", "10Mi", false]]);
  expect(containerOomScoreAdj(init, init.spec.initContainers![0]!, 1000 * MiB)).toBe(990);
});
