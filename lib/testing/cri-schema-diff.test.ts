import { expect, test } from "bun:test";
import type { CriSchema } from "../container/cri/cri-codec.ts";
import { criSchemaDifferences } from "./cri-schema-diff.ts";

const upstream: CriSchema = {
  messages: {
    Mount: [
      [1, "container_path", "string"],
      [3, "readonly", "bool"],
      [5, "propagation", "MountPropagation"],
      [6, "uid_mappings", "repeated IDMapping"],
    ],
    ImageSpec: [
      [1, "image", "string"],
      [2, "annotations", "map<string, string>"],
    ],
  },
  enums: {
    MountPropagation: [
      ["PROPAGATION_PRIVATE", 0],
      ["PROPAGATION_HOST_TO_CONTAINER", 1],
    ],
  },
  services: { ImageService: [["PullImage", "PullImageRequest", "PullImageResponse"]] },
};
const copy = (): CriSchema => structuredClone(upstream);

test("a subset of upstream with the same names, numbers and types has no differences", () => {
  const ours = copy();
  ours.messages.Mount!.splice(3, 1);
  delete ours.messages.ImageSpec;
  expect(criSchemaDifferences(ours, upstream)).toEqual([]);
});

test("a field's number, type or label that differs is named with both values", () => {
  const ours = copy();
  ours.messages.Mount![1] = [4, "readonly", "bool"];
  ours.messages.Mount![2] = [5, "propagation", "int32"];
  ours.messages.Mount![3] = [6, "uid_mappings", "IDMapping"];
  ours.messages.ImageSpec![1] = [2, "annotations", "repeated string"];
  expect(criSchemaDifferences(ours, upstream)).toEqual([
    "Mount.readonly: field number ours 4, upstream 3",
    'Mount.propagation: type ours "int32", upstream "MountPropagation"',
    'Mount.uid_mappings: type ours "IDMapping", upstream "repeated IDMapping"',
    'ImageSpec.annotations: type ours "repeated string", upstream "map<string, string>"',
  ]);
});

test("a field, message, enum value or method upstream does not have is named", () => {
  const ours = copy();
  ours.messages.Mount!.push([4, "selinux_relabel", "bool"]);
  ours.messages.Mount![0] = [1, "containerPath", "string"];
  ours.messages.Volume = [];
  ours.enums.MountPropagation!.push(["PROPAGATION_BIDIRECTIONAL", 2]);
  ours.enums.MountPropagation![1] = ["PROPAGATION_HOST_TO_CONTAINER", 3];
  ours.enums.Protocol = [];
  ours.services.ImageService!.push(["ImageFsInfo", "ImageFsInfoRequest", "ImageFsInfoResponse"]);
  ours.services.ImageService![0] = ["PullImage", "PullImageRequest", "ImageStatusResponse"];
  ours.services.RuntimeService = [];
  expect(criSchemaDifferences(ours, upstream)).toEqual([
    "Volume: declared by ours, not a message upstream",
    "Mount.containerPath: upstream has no such field (ours: number 1; upstream's 1: container_path)",
    "Mount.selinux_relabel: upstream has no such field (ours: number 4; upstream's 4: none)",
    "Protocol: declared by ours, not an enum upstream",
    "MountPropagation.PROPAGATION_HOST_TO_CONTAINER: value ours 3, upstream 1",
    "MountPropagation.PROPAGATION_BIDIRECTIONAL: upstream has no such value (ours: 2)",
    "RuntimeService: declared by ours, not a service upstream",
    "ImageService/PullImage: ours (PullImageRequest) → ImageStatusResponse, upstream (PullImageRequest) → PullImageResponse",
    "ImageService/ImageFsInfo: upstream has no such method",
  ]);
});

test("a field newer than the runtime's cri-api may be absent, but not replaced by another at its number", () => {
  const ours = copy();
  ours.messages.Mount!.push([4, "selinux_relabel", "bool"], [6, "gid_mappings", "repeated IDMapping"]);
  expect(criSchemaDifferences(ours, upstream, ["Mount.selinux_relabel", "Mount.gid_mappings"])).toEqual([
    "Mount.gid_mappings: upstream has no such field (ours: number 6; upstream's 6: uid_mappings)",
  ]);
  ours.messages.Mount![2] = [5, "propagation", "bool"];
  expect(criSchemaDifferences(ours, upstream, ["Mount.propagation"])).toContain(
    'Mount.propagation: type ours "bool", upstream "MountPropagation"',
  );
});
