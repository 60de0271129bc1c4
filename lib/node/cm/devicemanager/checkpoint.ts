// <root_dir>/device-plugins/kubelet_internal_checkpoint in the Go kubelet's format (checkpoint.Data of
// pkg/kubelet/cm/devicemanager/checkpoint) and checksum, so allocations survive a restart and either kubelet
// reads the other's file: the checksum is FNV-32a over go-spew's `%#v` of the data, as checkpointmanager's
// checksum.New computes it (hashutil.DeepHashObject).
import { readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { KubeletError } from "../../../api/types.ts";

export const CHECKPOINT_FILE = "kubelet_internal_checkpoint";

/** One container's devices of one resource: the ids per NUMA node (-1: none), the Allocate answer (wire bytes). */
export interface PodDevicesEntry {
  PodUID: string;
  ContainerName: string;
  ResourceName: string;
  /** NUMA node id → device ids; null as Go's nil map. */
  DeviceIDs: Record<string, string[] | null> | null;
  /** base64 of the AllocateResponse's ContainerAllocateResponse; null as Go's nil slice. */
  AllocResp: string | null;
}

export interface CheckpointData {
  PodDeviceEntries: PodDevicesEntry[] | null;
  /** Resource → its healthy device ids when written. */
  RegisteredDevices: Record<string, string[] | null> | null;
}

/** The file's JSON text for `data`, with its checksum. */
export function encodeCheckpoint(data: CheckpointData): string {
  return JSON.stringify({ Data: data, Checksum: checksum(data) });
}

/** The data of a checkpoint file's text; a bad checksum or shape is refused naming the file. */
export function decodeCheckpoint(text: string, path: string): CheckpointData {
  let parsed: { Data?: CheckpointData; Checksum?: number };
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new KubeletError("CorruptCheckpoint", `cannot read device checkpoint "${path}": ${(error as Error).message}`);
  }
  const data = parsed.Data;
  if (!data || typeof data !== "object")
    throw new KubeletError("CorruptCheckpoint", `cannot read device checkpoint "${path}": Data: Required value`);
  const actual = checksum(data);
  if (actual !== parsed.Checksum)
    throw new KubeletError(
      "CorruptCheckpoint",
      `cannot read device checkpoint "${path}": checkpoint is corrupted (checksum ${parsed.Checksum}, content hashes to ${actual}); remove it to start with no device allocations`,
    );
  return data;
}

/** Reads `<dir>/kubelet_internal_checkpoint`; undefined when there is none. */
export function readCheckpoint(dir: string): CheckpointData | undefined {
  const path = join(dir, CHECKPOINT_FILE);
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
  return decodeCheckpoint(text, path);
}

/** Writes the checkpoint atomically (a rename), as the checkpoint manager's file store does. */
export function writeCheckpoint(dir: string, data: CheckpointData): void {
  const path = join(dir, CHECKPOINT_FILE);
  writeFileSync(`${path}.tmp`, encodeCheckpoint(data), { mode: 0o600 });
  renameSync(`${path}.tmp`, path);
}

/** checksum.New(data): FNV-32a of go-spew's `%#v` rendering (types on fields, not on elements; sorted keys). */
export function checksum(data: CheckpointData): number {
  return fnv32a(spewData(data));
}

const list = (items: string[] | null | undefined) => (items == null ? "<nil>" : `[${items.join(" ")}]`);

function spewEntry(e: PodDevicesEntry): string {
  const ids =
    e.DeviceIDs == null
      ? "<nil>"
      : `map[${Object.keys(e.DeviceIDs)
          .map(Number)
          .sort((a, b) => a - b)
          .map((node) => `${node}:${list(e.DeviceIDs![String(node)])}`)
          .join(" ")}]`;
  const resp = e.AllocResp == null ? "<nil>" : `[${[...Buffer.from(e.AllocResp, "base64")].join(" ")}]`;
  return (
    `{PodUID:(string)${e.PodUID ?? ""} ContainerName:(string)${e.ContainerName ?? ""} ` +
    `ResourceName:(string)${e.ResourceName ?? ""} DeviceIDs:(checkpoint.DevicesPerNUMA)${ids} AllocResp:([]uint8)${resp}}`
  );
}

function spewData(d: CheckpointData): string {
  const entries = d.PodDeviceEntries == null ? "<nil>" : `[${d.PodDeviceEntries.map(spewEntry).join(" ")}]`;
  const registered =
    d.RegisteredDevices == null
      ? "<nil>"
      : `map[${Object.keys(d.RegisteredDevices)
          .sort()
          .map((name) => `${name}:${list(d.RegisteredDevices![name])}`)
          .join(" ")}]`;
  return (
    `(checkpoint.checkpointData){PodDeviceEntries:([]checkpoint.PodDevicesEntry)${entries} ` +
    `RegisteredDevices:(map[string][]string)${registered}}`
  );
}

function fnv32a(text: string): number {
  let hash = 0x811c9dc5;
  for (const byte of Buffer.from(text, "utf8")) {
    hash ^= byte;
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash >>> 0;
}
