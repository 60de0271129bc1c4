import { expect, test } from "bun:test";
import { ephemeralStorageAllocatable, filesystemCapacity } from "./ephemeral-storage.ts";

const Gi = 2 ** 30;

test("allocatable ephemeral-storage is capacity less kube and system reserved and the hard nodefs threshold", () => {
  const reserved = { kube: { "ephemeral-storage": "1Gi" }, system: { "ephemeral-storage": "2Gi" } };
  expect(ephemeralStorageAllocatable(100 * Gi, { ...reserved, evictionHard: { "nodefs.available": "10%" } })).toBe(
    87 * Gi,
  );
  expect(ephemeralStorageAllocatable(100 * Gi, { ...reserved, evictionHard: { "memory.available": "100Mi" } })).toBe(
    97 * Gi,
  );
  expect(ephemeralStorageAllocatable(2 * Gi, { ...reserved, evictionHard: {} })).toBe(0);
});

test("the capacity of a root_dir not made yet is its nearest existing parent's filesystem", () => {
  const seen: string[] = [];
  const statfs = (path: string) => {
    seen.push(path);
    if (path !== "/var/lib") throw Object.assign(new Error("ENOENT"), { code: "ENOENT" });
    return { blocks: 1000, bsize: 4096 };
  };
  expect(filesystemCapacity("/var/lib/kubelet/new", statfs)).toBe(4_096_000);
  expect(seen).toEqual(["/var/lib/kubelet/new", "/var/lib/kubelet", "/var/lib"]);
  expect(
    filesystemCapacity("/nowhere", () => {
      throw new Error("EIO");
    }),
  ).toBe(0);
});
