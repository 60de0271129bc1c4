// fleet apply and delete against an in-memory etcd, with another command writing between a command's
// read of the placement record and its transaction: compare-and-swap keeps exactly one placement.
import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FakeEtcd } from "../testing/fake-etcd.ts";
import { fleetApply, fleetDelete, placementKeys, type PlacementOptions } from "./fleet-apply.ts";

const dir = mkdtempSync(join(tmpdir(), "kubelet-fleet-apply-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const file = join(dir, "web.yaml");
writeFileSync(
  file,
  `{apiVersion: v1, kind: Pod, metadata: {name: web}, spec: {containers: [{name: app, image: busybox}]}}\n`,
);

const sink = () => {
  const text: string[] = [];
  return { text, write: (chunk: string) => text.push(chunk) > 0 } as unknown as NodeJS.WritableStream & {
    text: string[];
  };
};

/** Options whose client runs `meanwhile` (once per listed call) after reading a placement, before answering. */
function racing(etcd: FakeEtcd, meanwhile: Array<() => Promise<unknown>>) {
  const out = sink();
  const err = sink();
  const client: PlacementOptions["client"] = {
    async get(key) {
      const read = await etcd.get(key);
      await meanwhile.shift()?.();
      return read;
    },
    applyIf: (expected, changes) => etcd.applyIf(expected, changes),
  };
  return { client, dryRun: false, out, err, allowPrivileged: false };
}

const quiet = (etcd: FakeEtcd) => racing(etcd, []);
const nodesHolding = (etcd: FakeEtcd) =>
  [...etcd.data.keys()].filter((k) => k.endsWith("/pods/default/web")).map((k) => k.split("/")[3]);

test("two applies moving one pod at once leave it on one node, the one its placement record names", async () => {
  const etcd = new FakeEtcd();
  await fleetApply(file, { nodes: ["n1"] }, quiet(etcd));
  const options = racing(etcd, [() => fleetApply(file, { nodes: ["n3"] }, quiet(etcd))]);
  expect(await fleetApply(file, { nodes: ["n2"] }, options)).toBe(0);
  expect(nodesHolding(etcd)).toEqual(["n2"]);
  expect(JSON.parse((await etcd.get(placementKeys.placement("default", "web"))).entry!.value).nodes).toEqual(["n2"]);
  expect(options.out.text.join("")).toContain("(was on n3)");
});

test("a delete racing an apply that moves the pod removes it from the node it moved to", async () => {
  const etcd = new FakeEtcd();
  await fleetApply(file, { nodes: ["n1"] }, quiet(etcd));
  const options = racing(etcd, [() => fleetApply(file, { nodes: ["n2"] }, quiet(etcd))]);
  expect(await fleetDelete([{ namespace: "default", name: "web" }], options)).toBe(0);
  expect(nodesHolding(etcd)).toEqual([]);
  expect((await etcd.get(placementKeys.placement("default", "web"))).entry).toBeUndefined();
});

test("an apply that loses the race five times writes nothing and says to run it again", async () => {
  const etcd = new FakeEtcd();
  const rival = () => fleetApply(file, { nodes: ["n3"] }, quiet(etcd));
  const options = racing(etcd, [rival, rival, rival, rival, rival]);
  const failure = await fleetApply(file, { nodes: ["n2"] }, options).catch((error) => error);
  expect(failure).toMatchObject({ code: "Conflict" });
  expect(failure.message).toStartWith(
    'Operation cannot be fulfilled on pods "default/web": the object has been modified; please apply your changes to the latest version and try again',
  );
  expect(nodesHolding(etcd)).toEqual(["n3"]);
});
