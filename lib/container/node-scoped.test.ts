// Kubelets of different nodes sharing one Docker Engine each see only their own containers.
import { expect, test } from "bun:test";
import { FakeRuntime } from "../testing/fake-runtime.ts";
import { NODE_LABEL, scopeRuntimeToNode } from "./node-scoped.ts";
import { LABEL } from "./runtime.ts";

const body = (name: string, uid: string) => ({
  name,
  Image: "local/busybox:stable",
  Labels: { [LABEL.podUid]: uid },
  HostConfig: {},
});

test("a node lists the containers it created and unlabelled ones, never another node's", async () => {
  const docker = new FakeRuntime();
  const a = scopeRuntimeToNode(docker, "node-a");
  const b = scopeRuntimeToNode(docker, "node-b");
  await a.createContainer(body("k8s_app_web_default_u1_0", "u1"));
  await b.createContainer(body("k8s_app_db_default_u2_0", "u2"));
  await docker.createContainer(body("k8s_app_old_default_u3_0", "u3"));
  expect((await a.listContainers()).map((c) => c.name).sort()).toEqual([
    "k8s_app_old_default_u3_0",
    "k8s_app_web_default_u1_0",
  ]);
  expect((await b.listContainers()).map((c) => [c.name, c.labels[NODE_LABEL]])).toContainEqual([
    "k8s_app_db_default_u2_0",
    "node-b",
  ]);
  expect((await b.listContainers()).map((c) => c.name)).not.toContain("k8s_app_web_default_u1_0");
});
