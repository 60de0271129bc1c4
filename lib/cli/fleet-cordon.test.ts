// Cordoning a node records who and when under /registry/cordons/, where a rollout reads it.
import { expect, test } from "bun:test";
import { rolloutKeys } from "./fleet-rollout.ts";
import { setCordon } from "./fleet-cordon.ts";

function memory() {
  const data = new Map<string, string>();
  return {
    data,
    get: async (k: string) => ({
      entry: data.has(k) ? { key: k, value: data.get(k)!, lease: "0", modRevision: 1 } : undefined,
      revision: 1,
    }),
    put: async (k: string, v: string) => void data.set(k, v),
    delete: async (k: string) => void data.delete(k),
  };
}

test("cordon records who and when at the key a rollout reads; uncordon removes it; both say when nothing changes", async () => {
  const etcd = memory();
  const by = { who: "ann@ops", now: Date.UTC(2026, 0, 1) };
  expect(await setCordon(etcd, "node-1", true, by)).toBe("node/node-1 cordoned\n");
  expect(JSON.parse(etcd.data.get(rolloutKeys.cordon("node-1"))!)).toEqual({
    by: "ann@ops",
    at: "2026-01-01T00:00:00.000Z",
  });
  expect(await setCordon(etcd, "node-1", true, by)).toBe("node/node-1 already cordoned\n");
  expect(await setCordon(etcd, "node-1", false, by)).toBe("node/node-1 uncordoned\n");
  expect(etcd.data.size).toBe(0);
  expect(await setCordon(etcd, "node-1", false, by)).toBe("node/node-1 already uncordoned\n");
});
