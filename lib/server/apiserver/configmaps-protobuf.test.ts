import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { decodeConfigProtobuf } from "./configmaps-protobuf.ts";

// Bodies kubectl 1.32 sent: `kubectl create cm demo --from-literal=a=b --from-literal=c=d -n prod` and
// `kubectl create secret generic s1 --from-literal=p=q --type=kubernetes.io/basic-auth -n prod`.
const body = (name: string) => readFileSync(join(import.meta.dir, "../../../testdata/apiserver", name));

describe("Kubernetes protobuf bodies", () => {
  test("kubectl create configmap's body decodes to the ConfigMap it names", () => {
    expect(decodeConfigProtobuf(body("kubectl-create-configmap.pb"))).toEqual({
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "demo", namespace: "prod" },
      data: { a: "b", c: "d" },
    });
  });

  test("kubectl create secret's body decodes to the Secret with its data in base64 and its type", () => {
    expect(decodeConfigProtobuf(body("kubectl-create-secret.pb"))).toEqual({
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: "s1", namespace: "prod" },
      data: { p: Buffer.from("q").toString("base64") },
      type: "kubernetes.io/basic-auth",
    });
  });

  test("a body without the k8s envelope, or cut short, is refused with why", () => {
    expect(() => decodeConfigProtobuf(Buffer.from("{}"))).toThrow('does not start with "k8s\\0"');
    const cut = body("kubectl-create-configmap.pb").subarray(0, 30);
    expect(() => decodeConfigProtobuf(cut)).toThrow(/ends inside/);
  });
});
