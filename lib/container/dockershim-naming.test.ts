// The dockershim's container names, and a pause container read back as its sandbox.
import { expect, test } from "bun:test";
import { testSandboxConfig } from "../testing/cri-configs.ts";
import { dockerName, sandboxOf } from "./dockershim-naming.ts";
import { LABEL } from "./runtime.ts";

const labels = { [LABEL.podName]: "web", [LABEL.podNamespace]: "shop", [LABEL.podUid]: "u-1" };

test("a container's name is k8s_<container>_<pod>_<namespace>_<uid>_<attempt>", () => {
  expect(dockerName(testSandboxConfig("u-1", "web"), "POD", 3)).toBe("k8s_POD_web_default_u-1_3");
});

test("a pause container reads back as its sandbox: the pod from its labels, the attempt from its name, ready while it runs", () => {
  const pause = { id: "c1", name: "k8s_POD_web_shop_u-1_2", labels, running: true, createdAt: 5 };
  expect(sandboxOf(pause)).toEqual({
    id: "c1",
    metadata: { name: "web", namespace: "shop", uid: "u-1", attempt: 2 },
    state: "ready",
    createdAt: 5,
    labels,
  });
  expect(sandboxOf({ ...pause, running: false }).state).toBe("notready");
});

test("a name without an attempt at its end takes it from the restart-count label, else 0", () => {
  const pause = { id: "c1", name: "pause", labels, running: true, createdAt: 5 };
  expect(sandboxOf({ ...pause, labels: { ...labels, [LABEL.restartCount]: "4" } }).metadata.attempt).toBe(4);
  expect(sandboxOf(pause).metadata).toEqual({ name: "web", namespace: "shop", uid: "u-1", attempt: 0 });
});
