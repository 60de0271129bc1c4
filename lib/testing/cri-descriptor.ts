// Finds cri-api's compiled api.proto (package runtime.v1, a serialized FileDescriptorProto) inside a CRI runtime's
// binary, so cri-proto.ts is compared with the definition the runtime was built with and no .proto is vendored.
import { existsSync, readFileSync } from "node:fs";
import { delimiter, join } from "node:path";
import { inflateRawSync } from "node:zlib";

/** How a runtime.v1 descriptor was found in a binary. */
export interface ApiDescriptor {
  /** The serialized google.protobuf.FileDescriptorProto. */
  bytes: Uint8Array;
  /** gzip: gogo-protobuf's registered descriptor (containerd 1.6); raw: protobuf-go's rawDesc (newer builds). */
  stored: "gzip" | "raw";
  /** Offset of the blob in the binary. */
  offset: number;
}

/**
 * What follows the file name in every runtime.v1 descriptor: the end of the name, field 2 (package) "runtime.v1".
 * The package's length byte (10) keeps runtime.v1alpha2 (16) out. The name is "api.proto" where cri-api registered
 * it with gogo/golang protobuf (up to 0.33), "staging/src/k8s.io/cri-api/pkg/apis/runtime/v1/api.proto" in
 * protobuf-go's rawDesc (0.34 on, Kubernetes 1.34).
 */
const AFTER_NAME = Buffer.from("api.proto\x12\nruntime.v1", "latin1");
/** gzip as Go's compress/gzip writes it for gogo-protobuf: deflate, no flags, no modification time. */
const GZIP = Buffer.from([0x1f, 0x8b, 8, 0, 0, 0, 0, 0]);

/** The containerd binary to read: $KUBELET_TEST_CONTAINERD_BINARY, else `containerd` on $PATH. */
export function containerdBinary(env: Record<string, string | undefined> = process.env): string | undefined {
  if (env.KUBELET_TEST_CONTAINERD_BINARY) return env.KUBELET_TEST_CONTAINERD_BINARY;
  for (const dir of (env.PATH ?? "").split(delimiter)) {
    const path = join(dir, "containerd");
    if (dir && existsSync(path)) return path;
  }
  return undefined;
}

/**
 * The containerd 1.7 binary to read (Debian 13's, unpacked by scripts/services.sh beside Debian 12's 1.6):
 * $KUBELET_TEST_CONTAINERD_17_BINARY, else where services.sh unpacks it, if it is there.
 */
export function containerd17Binary(env: Record<string, string | undefined> = process.env): string | undefined {
  if (env.KUBELET_TEST_CONTAINERD_17_BINARY) return env.KUBELET_TEST_CONTAINERD_17_BINARY;
  const path = join(env.KUBELET_TEST_TRIXIE_DIR || "/tmp/kubelet-test-trixie", "root/usr/bin/containerd");
  return existsSync(path) ? path : undefined;
}

/** The runtime.v1 descriptor in a binary's bytes: stored raw, else gzipped; undefined when there is neither. */
export function findApiDescriptor(binary: Uint8Array): ApiDescriptor | undefined {
  const buf = Buffer.from(binary.buffer, binary.byteOffset, binary.byteLength);
  for (let at = buf.indexOf(AFTER_NAME); at >= 0; at = buf.indexOf(AFTER_NAME, at + 1)) {
    const start = nameStart(buf, at);
    if (start >= 0)
      return { bytes: buf.subarray(start, start + descriptorLength(buf, start)), stored: "raw", offset: start };
  }
  for (let at = buf.indexOf(GZIP); at >= 0; at = buf.indexOf(GZIP, at + 1)) {
    let bytes: Buffer;
    try {
      // The deflate data after the 10-byte header (no flags: no optional parts) ends where deflate says it does;
      // gunzip would also read what follows the 8-byte trailer, and fail on it unless it is another gzip member.
      bytes = inflateRawSync(buf.subarray(at + 10));
    } catch {
      continue; // the magic bytes by chance, or another kind of gzip data
    }
    const after = bytes.indexOf(AFTER_NAME);
    if (after >= 0 && nameStart(bytes, after) === 0) return { bytes, stored: "gzip", offset: at };
  }
  return undefined;
}

/**
 * Where the descriptor starts whose file name ends with the `api.proto` at `at`: field 1 (tag 0x0a, a one-byte
 * length) holding "api.proto" or a path ending in "/api.proto"; -1 when no such field ends there.
 */
function nameStart(buf: Buffer, at: number): number {
  const end = at + "api.proto".length;
  for (let length = "api.proto".length; length < 128; length++) {
    const start = end - length - 2;
    if (start < 0) break;
    if (buf[start] !== 0x0a || buf[start + 1] !== length) continue;
    const name = buf.toString("latin1", start + 2, end);
    if (name === "api.proto" || /^[\w./-]*\/api\.proto$/.test(name)) return start;
  }
  return -1;
}

/** Reads a runtime binary and finds its runtime.v1 descriptor, or says it cannot. */
export function readApiDescriptor(path: string): ApiDescriptor {
  const found = findApiDescriptor(readFileSync(path));
  if (!found)
    throw new Error(
      `cannot find cri-api's api.proto (runtime.v1) in ${path}: neither gzipped (gogo-protobuf) nor raw (protobuf-go)`,
    );
  return found;
}

/** FileDescriptorProto's fields by number: the wire type each is written with (10, 11: packed or not). */
const FIELDS: Record<number, number[]> = {
  1: [2], // name
  2: [2], // package
  3: [2], // dependency
  4: [2], // message_type
  5: [2], // enum_type
  6: [2], // service
  7: [2], // extension
  8: [2], // options
  9: [2], // source_code_info
  10: [0, 2], // public_dependency
  11: [0, 2], // weak_dependency
  12: [2], // syntax
  14: [0], // edition
};
const REPEATED = new Set([3, 4, 5, 6, 7, 10, 11]);

/**
 * Where a raw descriptor that starts at `start` ends: its fields are walked until a tag that cannot continue it
 * (an unknown field, a wrong wire type, a number lower than the last, as serializers write in number order, or a
 * singular field again), which is the next datum in the binary.
 */
function descriptorLength(buf: Buffer, start: number): number {
  let at = start;
  let last = 0;
  while (at < buf.length) {
    const tag = varint(buf, at);
    if (!tag) break;
    const field = tag.value >>> 3;
    const wire = tag.value & 7;
    if (!FIELDS[field]?.includes(wire) || field < last || (field === last && !REPEATED.has(field))) break;
    let end = tag.end;
    if (wire === 2) {
      const length = varint(buf, end);
      if (!length) break;
      end = length.end + length.value;
    } else {
      const value = varint(buf, end);
      if (!value) break;
      end = value.end;
    }
    if (end > buf.length) break;
    at = end;
    last = field;
  }
  return at - start;
}

/** A varint of up to 32 bits at `at`, or undefined when it is longer or runs off the buffer. */
function varint(buf: Buffer, at: number): { value: number; end: number } | undefined {
  let value = 0;
  for (let i = 0; i < 5 && at + i < buf.length; i++) {
    const b = buf[at + i]!;
    value += (b & 127) * 2 ** (7 * i);
    if (b < 128) return value > 0xffffffff ? undefined : { value, end: at + i + 1 };
  }
  return undefined;
}
