import { expect, test } from "bun:test";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CHECKPOINT_FILE, checksum, decodeCheckpoint, readCheckpoint, writeCheckpoint } from "./checkpoint.ts";

// Written by real kubelets (a Jetson node's nvidia.com/gpu allocation; an idle node's registered GPU).
const UPSTREAM_WITH_POD =
  '{"Data":{"PodDeviceEntries":[{"PodUID":"bf52b2cd-b611-4e79-86b1-280b283185c3","ContainerName":"check","ResourceName":"nvidia.com/gpu","DeviceIDs":{"-1":["tegra"]},"AllocResp":"Ch8KFk5WSURJQV9WSVNJQkxFX0RFVklDRVMSBXRlZ3Jh"}],"RegisteredDevices":{"nvidia.com/gpu":["tegra"]}},"Checksum":3660592824}';
const UPSTREAM_IDLE =
  '{"Data":{"PodDeviceEntries":null,"RegisteredDevices":{"nvidia.com/gpu":["GPU-0650a168-e770-3ea8-8ac3-8a1d419763e0"]}},"Checksum":3952659280}';

test("a checkpoint written by the Go kubelet is read with its checksum verified", () => {
  const data = decodeCheckpoint(UPSTREAM_WITH_POD, "sample");
  expect(data.PodDeviceEntries?.[0]?.DeviceIDs).toEqual({ "-1": ["tegra"] });
  expect(decodeCheckpoint(UPSTREAM_IDLE, "sample").PodDeviceEntries).toBeNull();
});

test("the checksum of an upstream checkpoint's data is the one the Go kubelet wrote", () => {
  for (const text of [UPSTREAM_WITH_POD, UPSTREAM_IDLE]) {
    const parsed = JSON.parse(text);
    expect(checksum(parsed.Data)).toBe(parsed.Checksum);
  }
});

test("a checkpoint written here reads back the same and byte for byte as the Go kubelet's JSON", () => {
  const dir = mkdtempSync(join(tmpdir(), "dm-checkpoint-"));
  const data = JSON.parse(UPSTREAM_WITH_POD).Data;
  writeCheckpoint(dir, data);
  expect(readFileSync(join(dir, CHECKPOINT_FILE), "utf8")).toBe(UPSTREAM_WITH_POD);
  expect(readCheckpoint(dir)).toEqual(data);
});

test("an edited checkpoint is refused as corrupted, naming the file and the fix", () => {
  const dir = mkdtempSync(join(tmpdir(), "dm-checkpoint-"));
  writeFileSync(join(dir, CHECKPOINT_FILE), UPSTREAM_IDLE.replace("GPU-0650", "GPU-0651"));
  expect(() => readCheckpoint(dir)).toThrow(/kubelet_internal_checkpoint": checkpoint is corrupted .*remove it/);
});

test("no checkpoint file reads as none", () => {
  expect(readCheckpoint(mkdtempSync(join(tmpdir(), "dm-checkpoint-")))).toBeUndefined();
});
