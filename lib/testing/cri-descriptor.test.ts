import { expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { containerd17Binary, containerdBinary, findApiDescriptor, readApiDescriptor } from "./cri-descriptor.ts";

/** A length-delimited field. */
const field = (number: number, value: string | Buffer) => {
  const bytes = Buffer.isBuffer(value) ? value : Buffer.from(value);
  return Buffer.concat([Buffer.from([(number << 3) | 2, bytes.length]), bytes]);
};
/** A small FileDescriptorProto: name, package, one dependency, two messages, one service, syntax. */
const descriptorOf = (pkg: string, name = "api.proto") =>
  Buffer.concat([
    field(1, name),
    field(2, pkg),
    field(3, "github.com/gogo/protobuf/gogoproto/gogo.proto"),
    field(4, field(1, "VersionRequest")),
    field(4, field(1, "VersionResponse")),
    field(6, field(1, "RuntimeService")),
    field(12, "proto3"),
  ]);
const noise = (n: number, seed: number) => Buffer.from(Array.from({ length: n }, (_, i) => (i * 31 + seed) & 255));

test("a gzipped runtime.v1 descriptor is found past v1alpha2's and gunzipped whole, whatever follows it", () => {
  const v1 = descriptorOf("runtime.v1");
  const binary = Buffer.concat([
    noise(300, 1),
    Buffer.from([0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 9, 9, 9]), // the magic bytes by chance
    gzipSync(descriptorOf("runtime.v1alpha2")),
    noise(50, 2),
    gzipSync(v1),
    noise(300, 3),
  ]);
  const found = findApiDescriptor(binary);
  expect(found?.stored).toBe("gzip");
  expect(Buffer.from(found!.bytes).equals(v1)).toBe(true);
});

test("a raw runtime.v1 descriptor is found by its path as protobuf-go names it (cri-api 0.34 on)", () => {
  const v1 = descriptorOf("runtime.v1", "staging/src/k8s.io/cri-api/pkg/apis/runtime/v1/api.proto");
  const found = findApiDescriptor(Buffer.concat([noise(100, 8), Buffer.from("\x0a"), v1, field(1, "next.proto")]));
  expect(found?.stored).toBe("raw");
  expect(found?.offset).toBe(101);
  expect(Buffer.from(found!.bytes).equals(v1)).toBe(true);
});

test("a raw runtime.v1 descriptor ends where the next datum cannot continue it", () => {
  const v1 = descriptorOf("runtime.v1");
  // Go's rodata puts the next string right after it: here another descriptor (field 1 again, lower than 12).
  for (const next of [
    field(1, "other.proto"),
    Buffer.from([0xff, 0xff]),
    Buffer.from("\x62\x06proto3"),
    Buffer.alloc(0),
  ]) {
    const binary = Buffer.concat([noise(100, 4), v1, next, noise(20, 5)]);
    const found = findApiDescriptor(next.length ? binary : Buffer.concat([noise(100, 4), v1]));
    expect(found?.stored).toBe("raw");
    expect([next.toString("latin1"), Buffer.from(found!.bytes).toString("latin1")]).toEqual([
      next.toString("latin1"),
      v1.toString("latin1"),
    ]);
  }
});

test("a binary without runtime.v1 has no descriptor, and reading one says which binary", () => {
  for (const other of [descriptorOf("runtime.v1alpha2"), descriptorOf("runtime.v1", "pkg/myapi.proto")])
    expect(findApiDescriptor(Buffer.concat([noise(100, 6), other, gzipSync(other)]))).toBeUndefined();
  const path = join(mkdtempSync(join(tmpdir(), "cri-descriptor-")), "containerd");
  writeFileSync(path, noise(1000, 7));
  expect(() => readApiDescriptor(path)).toThrow(`cannot find cri-api's api.proto (runtime.v1) in ${path}`);
});

test("the binary is $KUBELET_TEST_CONTAINERD_BINARY when set, else containerd on $PATH, else none", () => {
  const dir = mkdtempSync(join(tmpdir(), "cri-descriptor-"));
  writeFileSync(join(dir, "containerd"), "");
  expect(containerdBinary({ KUBELET_TEST_CONTAINERD_BINARY: "/opt/c/containerd", PATH: dir })).toBe(
    "/opt/c/containerd",
  );
  expect(containerdBinary({ PATH: `/nonexistent:${dir}` })).toBe(join(dir, "containerd"));
  expect(containerdBinary({ PATH: "/nonexistent" })).toBeUndefined();
});

test("containerd 1.7 is $KUBELET_TEST_CONTAINERD_17_BINARY when set, else services.sh's unpacked one if present", () => {
  const dir = mkdtempSync(join(tmpdir(), "cri-descriptor-"));
  expect(containerd17Binary({ KUBELET_TEST_CONTAINERD_17_BINARY: "/opt/c17/containerd" })).toBe("/opt/c17/containerd");
  expect(containerd17Binary({ KUBELET_TEST_TRIXIE_DIR: dir })).toBeUndefined();
  mkdirSync(join(dir, "root/usr/bin"), { recursive: true });
  writeFileSync(join(dir, "root/usr/bin/containerd"), "");
  expect(containerd17Binary({ KUBELET_TEST_TRIXIE_DIR: dir })).toBe(join(dir, "root/usr/bin/containerd"));
});
