// cri-proto.ts against the runtime.v1 that the test services' containerd was built with (its compiled api.proto):
// without this, a wrong field number would round-trip through the codec and its test, which read the same text.
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { CRI_SCHEMA } from "./cri-schema.ts";
import { criDescriptorOf, criSchemaOf, criSchemaOfDescriptor } from "../../../scripts/cri-schema-gen.ts";
import { containerdBinary, readApiDescriptor } from "../../testing/cri-descriptor.ts";
import { criSchemaDifferences } from "../../testing/cri-schema-diff.ts";

/**
 * Fields cri-proto.ts declares that cri-api added after the oldest runtime the tests run (containerd 1.6.20, cri-api
 * 0.25): absent there, but checked like the others against a runtime that has them.
 */
const NEWER_THAN_CONTAINERD_1_6 = [
  "ImageFsInfoResponse.container_filesystems", // cri-api 0.29 (Kubernetes 1.29, KEP-4191)
  "CDIDevice", // cri-api 0.28 (Kubernetes 1.28, KEP-4009): containerd 1.7 reads CDI_devices, 1.6 ignores the field
  "ContainerConfig.CDI_devices",
];

test("a compiled descriptor reads back into the tables cri-proto.ts gives (maps, nested types and enums too)", () => {
  expect(criSchemaOfDescriptor(criDescriptorOf())).toEqual(criSchemaOf());
});

const binary = containerdBinary();
if (binary)
  describe(`cri-proto.ts against the runtime.v1 compiled into ${binary}`, () => {
    const upstream = criSchemaOfDescriptor(readApiDescriptor(binary).bytes);

    test("every message, field name, number, type and enum value that cri-proto.ts declares is upstream's", () => {
      expect(criSchemaDifferences(criSchemaOf(), upstream, NEWER_THAN_CONTAINERD_1_6)).toEqual([]);
    });

    test("every method the client calls is in its service upstream, with the same request and response", () => {
      const source = readFileSync(join(import.meta.dir, "cri-client.ts"), "utf8");
      const calls = [...source.matchAll(/\b(rt|img)(?:<[^>]*>)?\(\s*"(\w+)"/g)].map(([, via, method]) => ({
        service: via === "rt" ? "RuntimeService" : "ImageService",
        method: method!,
      }));
      expect(calls.length).toBeGreaterThan(20);
      const wrong = calls.flatMap(({ service, method }) => {
        const ours = CRI_SCHEMA.services[service]?.find(([m]) => m === method);
        const theirs = upstream.services[service]?.find(([m]) => m === method);
        return ours && theirs && ours.join() === theirs.join() ? [] : [{ service, method, ours, theirs }];
      });
      expect(wrong).toEqual([]);
    });
  });
else if (process.env.CI === "true")
  test("has a containerd binary to compare cri-proto.ts with", () => {
    throw new Error(
      "no containerd binary: install containerd (scripts/services.sh does) or set KUBELET_TEST_CONTAINERD_BINARY (CI=true forbids skipping)",
    );
  });
else describe.skip("cri-proto.ts against the runtime.v1 of a containerd binary (none found)", () => {});
