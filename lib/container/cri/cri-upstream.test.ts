// cri-proto.ts against the runtime.v1 that the test services' containerd 1.6 and 1.7 were built with (their compiled api.proto):
// without this, a wrong field number would round-trip through the codec and its test, which read the same text.
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { CRI_SCHEMA } from "./cri-schema.ts";
import { criDescriptorOf, criSchemaOf, criSchemaOfDescriptor } from "../../../scripts/cri-schema-gen.ts";
import { containerd17Binary, containerdBinary, readApiDescriptor } from "../../testing/cri-descriptor.ts";
import { criSchemaDifferences } from "../../testing/cri-schema-diff.ts";

/**
 * What cri-proto.ts declares that cri-api added after containerd 1.7.24's (cri-api 0.27): absent there, but checked
 * like the rest against a runtime that has it.
 */
const NEWER_THAN_CONTAINERD_1_7 = [
  "ImageFsInfoResponse.container_filesystems", // cri-api 0.29 (Kubernetes 1.29, KEP-4191)
  "CDIDevice", // cri-api 0.28 (Kubernetes 1.28, KEP-4009): containerd 1.7 reads CDI_devices, 1.6 ignores the field
  "ContainerConfig.CDI_devices",
];
const NEWER_THAN_CONTAINERD_1_6 = NEWER_THAN_CONTAINERD_1_7;
/**
 * Not compared with containerd 1.6: its cri-api 0.25 has GetContainerEvents in its alpha shape (pod_sandbox_metadata
 * at 4, no statuses), which 1.6 never serves (it answers Unimplemented); ours is 0.26's, compared with 1.7's.
 */
const NOT_SERVED_BY_CONTAINERD_1_6 = ["ContainerEventResponse"];

test("a compiled descriptor reads back into the tables cri-proto.ts gives (maps, nested types, enums and streams too)", () => {
  expect(criSchemaOfDescriptor(criDescriptorOf())).toEqual(criSchemaOf());
});

/** The methods cri-client.ts calls, by the helper it calls them through. */
function calledMethods(): Array<{ service: string; method: string }> {
  const source = readFileSync(join(import.meta.dir, "cri-client.ts"), "utf8");
  return [...source.matchAll(/\b(rt|img|rtStream)(?:<[^>]*>)?\(\s*"(\w+)"/g)].map(([, via, method]) => ({
    service: via === "img" ? "ImageService" : "RuntimeService",
    method: method!,
  }));
}

/** cri-proto.ts against the api.proto compiled into one containerd binary; `newer` may be absent from it. */
function againstBinary(
  version: string,
  binary: string | undefined,
  newer: string[],
  envVariable: string,
  notServed: string[] = [],
): void {
  if (!binary) {
    if (process.env.CI === "true")
      test(`has a containerd ${version} binary to compare cri-proto.ts with`, () => {
        throw new Error(
          `no containerd ${version} binary: run \`bash scripts/services.sh install\` or set ${envVariable} (CI=true forbids skipping)`,
        );
      });
    else describe.skip(`cri-proto.ts against the runtime.v1 of a containerd ${version} binary (none found)`, () => {});
    return;
  }
  describe(`cri-proto.ts against the runtime.v1 compiled into containerd ${version} (${binary})`, () => {
    const upstream = criSchemaOfDescriptor(readApiDescriptor(binary).bytes);

    test("every message, field name, number, type and enum value that cri-proto.ts declares is upstream's", () => {
      const ours = criSchemaOf();
      for (const message of notServed) delete ours.messages[message];
      expect(criSchemaDifferences(ours, upstream, newer)).toEqual([]);
    });

    test("every method the client calls is in its service upstream, with the same request and response", () => {
      const calls = calledMethods();
      expect(calls.length).toBeGreaterThan(20);
      const wrong = calls.flatMap(({ service, method }) => {
        const ours = CRI_SCHEMA.services[service]?.find(([m]) => m === method);
        const theirs = upstream.services[service]?.find(([m]: [string, string, string]) => m === method);
        return ours && theirs && ours.join() === theirs.join() ? [] : [{ service, method, ours, theirs }];
      });
      expect(wrong).toEqual([]);
    });
  });
}

againstBinary(
  "1.6",
  containerdBinary(),
  NEWER_THAN_CONTAINERD_1_6,
  "KUBELET_TEST_CONTAINERD_BINARY",
  NOT_SERVED_BY_CONTAINERD_1_6,
);
againstBinary("1.7", containerd17Binary(), NEWER_THAN_CONTAINERD_1_7, "KUBELET_TEST_CONTAINERD_17_BINARY");

test("the client's event stream is typed: GetContainerEvents answers a stream of ContainerEventResponse", () => {
  expect(calledMethods()).toContainEqual({ service: "RuntimeService", method: "GetContainerEvents" });
  expect(CRI_SCHEMA.services.RuntimeService).toContainEqual([
    "GetContainerEvents",
    "GetEventsRequest",
    "stream ContainerEventResponse",
  ]);
});
