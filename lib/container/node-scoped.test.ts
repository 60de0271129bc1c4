// Kubelets of different nodes sharing one Docker Engine each see only their own containers.
import { expect, test } from "bun:test";
import { FakeRuntime } from "../testing/fake-runtime.ts";
import { NODE_LABEL, scopeRuntimeToNode } from "./node-scoped.ts";
import type { Runtime } from "./runtime.ts";
import { testContainerConfig, testSandboxConfig } from "../testing/cri-configs.ts";

/** Runs pod `pod` (uid `uid`) with its container `name` through `runtime`. */
async function runPod(runtime: Runtime, name: string, pod: string, uid: string): Promise<void> {
  const sandbox = testSandboxConfig(uid, pod);
  const sandboxId = await runtime.runPodSandbox(sandbox);
  await runtime.createContainer(
    sandboxId,
    testContainerConfig(sandbox, name, 0, "local/busybox:stable", ["sleep", "60"]),
    sandbox,
  );
}

test("a node lists the sandboxes and containers it created and unlabelled ones, never another node's", async () => {
  const docker = new FakeRuntime();
  const a = scopeRuntimeToNode(docker, "node-a");
  const b = scopeRuntimeToNode(docker, "node-b");
  await runPod(a, "app", "web", "u1");
  await runPod(b, "app", "db", "u2");
  await runPod(docker, "app", "old", "u3");
  expect((await a.listContainers()).map((c) => c.name).sort()).toEqual([
    "k8s_app_old_default_u3_0",
    "k8s_app_web_default_u1_0",
  ]);
  expect((await a.listPodSandboxes()).map((s) => s.metadata.name).sort()).toEqual(["old", "web"]);
  expect((await b.listPodSandboxes()).map((s) => [s.metadata.name, s.labels[NODE_LABEL] ?? "unlabelled"])).toEqual([
    ["db", "node-b"],
    ["old", "unlabelled"],
  ]);
  expect((await b.listContainers()).map((c) => [c.name, c.labels[NODE_LABEL]])).toContainEqual([
    "k8s_app_db_default_u2_0",
    "node-b",
  ]);
  expect((await b.listContainers()).map((c) => c.name)).not.toContain("k8s_app_web_default_u1_0");
});

test("a pull through the node's view reports its progress (the progress deadline and runonce's display need it)", async () => {
  const docker = new FakeRuntime();
  docker.pullDelayMs = 2;
  docker.pullProgressEveryMs = 1;
  const heard: string[] = [];
  await scopeRuntimeToNode(docker, "node-a").pullImage("busybox:1.36", { onProgress: (p) => heard.push(p.message) });
  expect(heard).toEqual(["busybox:1.36: Downloading 1/2", "busybox:1.36: Downloading 2/2"]);
});
