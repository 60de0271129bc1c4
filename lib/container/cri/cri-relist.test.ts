import { expect, test } from "bun:test";
import type { CriContainer, PodSandbox } from "../cri-types.ts";
import { createRelistEntries } from "./cri-relist.ts";

const ours = (labels: Record<string, string>) => labels.ours === "yes";
const sandbox = (id: string, state: PodSandbox["state"], mine = true): PodSandbox => ({
  id,
  metadata: { name: id, namespace: "default", uid: id, attempt: 0 },
  state,
  created_at: 1,
  labels: mine ? { ours: "yes" } : {},
  annotations: {},
});
const container = (id: string, state: CriContainer["state"]): CriContainer => ({
  id,
  pod_sandbox_id: "s1",
  metadata: { name: id, attempt: 0 },
  image: null,
  image_ref: "",
  state,
  created_at: 1,
  labels: { ours: "yes" },
  annotations: {},
});

test("sandboxes relist as running or exited, containers as their state, and what is not the kubelet's is left out", () => {
  const entries = createRelistEntries(ours)(
    [sandbox("s1", "SANDBOX_READY"), sandbox("s2", "SANDBOX_NOTREADY"), sandbox("x", "SANDBOX_READY", false)],
    [container("c1", "CONTAINER_RUNNING")],
  );
  expect(entries).toEqual([
    { id: "s1", state: "CONTAINER_RUNNING", labels: { ours: "yes" } },
    { id: "s2", state: "CONTAINER_EXITED", labels: { ours: "yes" } },
    { id: "c1", state: "CONTAINER_RUNNING", labels: { ours: "yes" } },
  ]);
});

test("an item listed again as the same object maps to the entry made before; a changed item (a new object) to a new one", () => {
  const relist = createRelistEntries(ours);
  const [s1, c1] = [sandbox("s1", "SANDBOX_READY"), container("c1", "CONTAINER_RUNNING")];
  const first = relist([s1], [c1]);
  const exited = container("c1", "CONTAINER_EXITED");
  const second = relist([s1], [exited]);
  expect(second[0]).toBe(first[0]!);
  expect(second[1]).not.toBe(first[1]!);
  expect(second[1]).toEqual({ id: "c1", state: "CONTAINER_EXITED", labels: { ours: "yes" } });
  expect(relist([s1], [exited])[1]).toBe(second[1]!);
});
