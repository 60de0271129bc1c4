// A pod's revisions: listed in revision order from their zero-padded keys, pruned oldest first.
import { expect, test } from "bun:test";
import { FakeEtcd } from "../testing/fake-etcd.ts";
import { webPod } from "../testing/rollout-fleet.ts";
import { listRevisions, type PodRevision, pruneRevisions, revisionKeys } from "./fleet-revisions.ts";

const revision = (n: number): PodRevision => ({
  revision: n,
  hash: `h${n}`,
  pod: webPod(`v${n}`),
  createdAt: "2026-01-01T00:00:00.000Z",
  createdBy: "ann@ops",
});

test("revisions are listed in revision order, 10 after 9", async () => {
  const etcd = new FakeEtcd();
  for (const n of [10, 2, 9, 1])
    await etcd.apply([{ key: revisionKeys.revision("default", "web", n), value: JSON.stringify(revision(n)) }]);
  expect(revisionKeys.revision("default", "web", 9)).toBe("/registry/revisions/default/web/0000000009");
  expect((await listRevisions(etcd, "default", "web")).map((r) => r.revision)).toEqual([1, 2, 9, 10]);
  expect(await listRevisions(etcd, "default", "db")).toEqual([]);
});

test("pruning keeps the newest `limit` revisions besides the ones named, deleting the oldest", () => {
  const all = [1, 2, 3, 4, 5, 6].map(revision);
  expect(pruneRevisions(all, 2, [6, 1], "default", "web").map((d) => d.key.slice(-2))).toEqual(["02", "03"]);
  expect(pruneRevisions(all, 10, [6], "default", "web")).toEqual([]);
  expect(pruneRevisions(all, 0, [6], "default", "web")).toHaveLength(5);
});
