// Image garbage collection (the Go kubelet's image GC manager): when the filesystem holding the
// runtime's images is above --image_gc_high_threshold, remove unused images, least recently used
// first, never the runtime's sandbox image (its Status says which: containerd's sandbox_image) nor
// --network_container_image nor one first seen less than --minimum_image_ttl_duration ago, until
// usage is below --image_gc_low_threshold; whatever the usage, images unused for longer than
// imageMaximumGCAge (once the kubelet has run that long). Also the space check before a pull.
import type { Clock } from "../../clock.ts";
import type { ImageSummary, Runtime } from "../../container/runtime.ts";
import { KubeletError } from "../../api/types.ts";
import type { Logger } from "../../log.ts";
import type { EventRecorder } from "../events/events.ts";
import { nodeRef } from "../events/events.ts";
import type { FsStats, StatFs } from "../stats/filesystem.ts";

export interface ImageGcOptions {
  /** Percent of the image filesystem. */
  highThresholdPercent: number;
  lowThresholdPercent: number;
  minAgeMs: number;
  /** imageMaximumGCAge: unused images older than this are removed whatever the disk usage (0 or absent = never). */
  maxAgeMs?: number;
  /** --network_container_image: kept, as the runtime's own sandbox image is. */
  pauseImage: string;
  nodeName: string;
  clock: Clock;
  log: Logger;
  events: EventRecorder;
}

export interface ImageGcDeps {
  runtime: Runtime;
  statFs: StatFs;
}

export interface ImageGc {
  /** The image filesystem's usage now (statfs of Docker's data root). */
  imageFs(): Promise<FsStats>;
  /** One pass (run every few seconds: below the threshold it is a statfs): above the high threshold, frees unused images down to the low threshold; records events on failure. */
  garbageCollect(): Promise<void>;
  /** Removes unused images, least recently used first, until `bytes` are freed; returns the bytes freed. */
  freeSpace(bytes: number): Promise<number>;
  /** Throws NoDiskSpace when the image filesystem stays above the high threshold even after a collection. */
  checkSpaceForPull(image: string): Promise<void>;
}

/**
 * An image reference in full, as a CRI runtime lists tags: `busybox` and `docker.io/library/busybox:latest` are one
 * image, `local/pause:latest` is `docker.io/local/pause:latest` (Docker's normalisation of names).
 */
export function fullReference(ref: string): string {
  const [first, ...rest] = ref.split("/");
  const hasRegistry = rest.length > 0 && (/[.:]/.test(first!) || first === "localhost");
  const named = hasRegistry ? ref : `docker.io/${rest.length ? "" : "library/"}${ref}`;
  const last = named.slice(named.lastIndexOf("/") + 1);
  return named.includes("@") || last.includes(":") ? named : `${named}:latest`;
}

/** How often image use is recorded while the disk is fine (the Go kubelet's image GC period). */
const DETECTION_PERIOD_MS = 300_000;

interface ImageRecord {
  firstDetected: number;
  lastUsed: number;
}

export function createImageGc(options: ImageGcOptions, deps: ImageGcDeps): ImageGc {
  const { clock, log, events } = options;
  const { runtime } = deps;
  const records = new Map<string, ImageRecord>();
  let lastDetection = -Infinity;
  let dataRoot: string | undefined;
  /** When collection began (the kubelet's start): no image is too old before the kubelet has run maxAge itself. */
  const began = clock.now();
  const maxAgeMs = options.maxAgeMs ?? 0;
  // Last use is known as of the last listing: with a maximum age, images are listed often enough that an image
  // goes at most a tenth of that age late.
  const detectionPeriodMs = maxAgeMs > 0 ? Math.min(DETECTION_PERIOD_MS, maxAgeMs / 10) : DETECTION_PERIOD_MS;

  // The runtime names the mount point (CRI ImageFsInfo); capacity and what is free come from the filesystem itself.
  const imageFs = async () => deps.statFs((dataRoot ??= (await runtime.imageFsInfo()).mountpoint));
  const usedPercent = (fs: FsStats) =>
    fs.capacityBytes > 0 ? (100 * (fs.capacityBytes - fs.availableBytes)) / fs.capacityBytes : 0;

  /** Refreshes the records: new images are first detected now, images in use were last used now. */
  const detect = async (): Promise<ImageSummary[]> => {
    const now = clock.now();
    lastDetection = now;
    const images = await runtime.listImages();
    const present = new Set(images.map((i) => i.id));
    for (const id of records.keys()) if (!present.has(id)) records.delete(id);
    for (const image of images) {
      const record = records.get(image.id) ?? { firstDetected: now, lastUsed: 0 };
      if (image.inUse) record.lastUsed = now;
      records.set(image.id, record);
    }
    return images;
  };

  /** Unused images GC may remove (not the sandbox images, none younger than minAge), least recently used first. */
  const removable = async (images: ImageSummary[]) => {
    const { sandboxImage } = await runtime.status();
    const kept = new Set([options.pauseImage, ...(sandboxImage ? [sandboxImage] : [])].map(fullReference));
    const now = clock.now();
    return images
      .filter((i) => !i.inUse && !i.tags.some((tag) => kept.has(fullReference(tag))))
      .map((i) => ({ image: i, record: records.get(i.id)! }))
      .filter(({ record }) => now - record.firstDetected >= options.minAgeMs)
      .sort((a, b) => a.record.lastUsed - b.record.lastUsed || a.record.firstDetected - b.record.firstDetected);
  };

  /** Removes one image; false (logged) when the runtime refuses. */
  const remove = async (image: ImageSummary, why: string): Promise<boolean> => {
    try {
      await runtime.removeImage(image.id);
    } catch (error) {
      log.warn(`image garbage collection: cannot remove ${image.tags[0] ?? image.id}: ${(error as Error).message}`);
      return false;
    }
    records.delete(image.id);
    log.info(`image garbage collection removed ${image.tags.join(", ") || image.id} (${image.sizeBytes} bytes${why})`);
    return true;
  };

  const freeSpace = async (bytes: number): Promise<number> => {
    let freed = 0;
    for (const { image } of await removable(await detect())) {
      if (freed >= bytes) break;
      if (await remove(image, "")) freed += image.sizeBytes;
    }
    return freed;
  };

  /** The Go kubelet's freeOldImages: unused for longer than imageMaximumGCAge (a never-used image counts as unused since ever). */
  const freeOldImages = async (images: ImageSummary[]) => {
    const now = clock.now();
    if (maxAgeMs <= 0 || now - began <= maxAgeMs) return;
    for (const { image, record } of await removable(images))
      if (now - record.lastUsed > maxAgeMs)
        await remove(image, `, unused for longer than imageMaximumGCAge ${maxAgeMs / 1000}s`);
  };

  const garbageCollect = async () => {
    let fs: FsStats;
    try {
      fs = await imageFs();
    } catch (error) {
      events.record(nodeRef(options.nodeName), "Warning", "ImageGCFailed", (error as Error).message);
      return;
    }
    // statfs is cheap and runs every pass; listing images (for least-recently-used times) only now and then.
    if (clock.now() - lastDetection >= detectionPeriodMs) {
      try {
        await freeOldImages(await detect());
      } catch (error) {
        events.record(nodeRef(options.nodeName), "Warning", "ImageGCFailed", (error as Error).message);
      }
      fs = await imageFs();
    }
    const used = usedPercent(fs);
    if (used < options.highThresholdPercent) return;
    const target = fs.capacityBytes - fs.availableBytes - (fs.capacityBytes * options.lowThresholdPercent) / 100;
    log.info(
      `image filesystem ${used.toFixed(0)}% used, above --image_gc_high_threshold ${options.highThresholdPercent}%: freeing ${Math.round(target)} bytes`,
    );
    try {
      const freed = await freeSpace(target);
      if (freed < target) {
        events.record(
          nodeRef(options.nodeName),
          "Warning",
          "FreeDiskSpaceFailed",
          `Failed to garbage collect required amount of images. Attempted to free ${Math.round(target)} bytes, but only found ${freed} bytes eligible to free.`,
        );
      }
    } catch (error) {
      events.record(nodeRef(options.nodeName), "Warning", "ImageGCFailed", (error as Error).message);
    }
  };

  return {
    imageFs,
    garbageCollect,
    freeSpace,
    async checkSpaceForPull(image) {
      if (usedPercent(await imageFs()) < options.highThresholdPercent) return;
      await garbageCollect();
      const used = usedPercent(await imageFs());
      if (used < options.highThresholdPercent) return;
      throw new KubeletError(
        "NoDiskSpace",
        `the image filesystem (${dataRoot}) is ${used.toFixed(0)}% full, above --image_gc_high_threshold ${options.highThresholdPercent}%, and image garbage collection could not free enough space: free disk space or remove images`,
      );
    },
  };
}
