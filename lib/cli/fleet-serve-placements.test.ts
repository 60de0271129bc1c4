import { describe, expect, test } from "bun:test";
import type { Pod } from "../api/types.ts";
import { isApiError } from "../server/apiserver/api-status.ts";
import { FLEET_PLACED } from "../server/apiserver/fleet-pods.ts";
import { ETCD_DAEMONS, etcdPodKey } from "../sources/etcd.ts";
import type { EtcdClient } from "../sources/etcd-client.ts";
import { FakeEtcd } from "../testing/fake-etcd.ts";
import { placementKeys } from "./fleet-apply.ts";
import { createFleetPlacements, FLEET_SELECTOR } from "./fleet-serve-placements.ts";

const pod = (name: string, extra: { nodeName?: string; annotations?: Record<string, string> } = {}): Pod =>
  ({
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace: "default", annotations: extra.annotations ?? {} },
    spec: { containers: [{ name: "app", image: "busybox" }], ...(extra.nodeName ? { nodeName: extra.nodeName } : {}) },
  }) as Pod;

const setUp = () => {
  const etcd = new FakeEtcd();
  return { etcd, target: createFleetPlacements(etcd as unknown as EtcdClient) };
};

describe("fleet serve's pod writes", () => {
  test("a pod naming its node in spec.nodeName is placed on that node, with the placement record fleet apply writes", async () => {
    const { etcd, target } = setUp();
    await target.merge("http", "ADD", [pod("web", { nodeName: "a" })]);
    expect(etcd.values(etcdPodKey("a", "default", "web")).size).toBe(1);
    expect(
      etcd.values(placementKeys.placement("default", "web")).get(placementKeys.placement("default", "web")),
    ).toMatchObject({
      nodes: ["a"],
    });
  });

  test("a pod with the kubelet.fleet/selector annotation is placed on every node with those labels", async () => {
    const { etcd, target } = setUp();
    await target.merge("http", "ADD", [pod("agent", { annotations: { [FLEET_SELECTOR]: "gpu=yes" } })]);
    const placed = etcd.values(`${ETCD_DAEMONS}default/agent`).get(`${ETCD_DAEMONS}default/agent`);
    expect(placed.spec.nodeSelector).toEqual({ gpu: "yes" });
    expect(placed.spec.nodeName).toBeUndefined();
  });

  test("a pod with neither is refused as Invalid naming spec.nodeName, and nothing is written", async () => {
    const { etcd, target } = setUp();
    const error = await Promise.resolve(target.merge("http", "ADD", [pod("lost")])).catch((e) => e);
    expect(isApiError(error)).toBe(true);
    expect(error.status.code).toBe(422);
    expect(error.status.message).toContain("spec.nodeName: Required value: fleet serve has no scheduler");
    expect(etcd.data.size).toBe(0);
  });

  test("deleting any served copy removes the placement from every node", async () => {
    const { etcd, target } = setUp();
    await target.merge("http", "ADD", [pod("web", { nodeName: "a" })]);
    await target.merge("http", "REMOVE", [
      pod("web-a", { nodeName: "a", annotations: { [FLEET_PLACED]: "default/web" } }),
    ]);
    expect(etcd.data.size).toBe(0);
  });
});
