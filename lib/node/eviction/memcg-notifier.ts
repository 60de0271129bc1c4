// The kernel's memory threshold notification (the Go kubelet's memory threshold notifier, kernelMemcgNotification):
// an eventfd registered in a cgroup v1 memory cgroup's cgroup.event_control against memory.usage_in_bytes, which
// the kernel signals when usage crosses the threshold either way; each signal calls onCrossed, so eviction runs
// at once instead of at its next 10 s pass. cgroup v2 has no cgroup.event_control (upstream's notifier is
// disabled there too): setThreshold then says why not.
import { closeSync, openSync, read, writeFileSync, writeSync, existsSync } from "node:fs";
import { join } from "node:path";
import { thresholdQuantity, type Threshold } from "./eviction-thresholds.ts";
import type { MemoryStats } from "./node-signals.ts";

export interface MemcgNotifierOptions {
  /** The memory cgroup watched: the root one (/sys/fs/cgroup/memory) for memory.available. */
  cgroupPath: string;
  /** Called on every crossing the kernel reports. */
  onCrossed(): void;
}

export interface MemcgNotifierDeps {
  /** A new eventfd, or undefined where the JavaScript runtime cannot make one (no FFI to libc). */
  eventfd(): Promise<number | undefined>;
}

export interface MemcgNotifier {
  /**
   * Registers (again) the usage in bytes at which the kernel notifies, replacing the last registration; resolves to
   * undefined when armed, else to why notifications cannot be had here.
   */
  setThreshold(usageBytes: number): Promise<string | undefined>;
  /** Ends the registration; no onCrossed after this. */
  stop(): void;
}

/**
 * The usage at which memory.available meets `threshold` (upstream's UpdateThreshold): capacity − the threshold's
 * quantity + inactive_file, since the kernel compares usage, which counts inactive file pages, and the signal
 * is the working set, which does not.
 */
export function memcgThresholdBytes(memory: MemoryStats, threshold: Threshold): number {
  const capacity = memory.availableBytes + memory.workingSetBytes;
  const inactiveFile = Math.max(0, (memory.usageBytes ?? memory.workingSetBytes) - memory.workingSetBytes);
  return Math.max(0, Math.round(capacity - thresholdQuantity(threshold, capacity) + inactiveFile));
}

const ONE = Buffer.from([1, 0, 0, 0, 0, 0, 0, 0]);

export function createMemcgNotifier(options: MemcgNotifierOptions, deps: MemcgNotifierDeps): MemcgNotifier {
  /** The armed eventfd, if any. */
  let armed: number | undefined;
  let stopped = false;

  /** Ends one registration: a write of our own wakes its pending read, which then closes the eventfd. */
  const disarm = () => {
    if (armed === undefined) return;
    writeSync(armed, ONE);
    armed = undefined;
  };

  /** Reads the eventfd until it is disarmed; each read the kernel answers is one crossing. */
  const listen = (fd: number) => {
    const buffer = Buffer.alloc(8);
    read(fd, buffer, 0, 8, null, (error) => {
      if (error || armed !== fd || stopped) {
        closeSync(fd);
        return;
      }
      options.onCrossed();
      listen(fd);
    });
  };

  return {
    async setThreshold(usageBytes) {
      if (stopped) return "the notifier is stopped";
      const control = join(options.cgroupPath, "cgroup.event_control");
      if (!existsSync(control))
        return `${control} does not exist: threshold notifications are cgroup v1's (upstream disables them on cgroup v2 too)`;
      const fd = await deps.eventfd();
      if (fd === undefined) return "eventfd(2) needs libc, reached here only under bun (bun:ffi)";
      const usage = openSync(join(options.cgroupPath, "memory.usage_in_bytes"), "r");
      try {
        writeFileSync(control, `${fd} ${usage} ${Math.round(usageBytes)}`);
      } catch (error) {
        closeSync(fd);
        return `cannot register in ${control}: ${(error as Error).message}`;
      } finally {
        closeSync(usage); // the kernel keeps its own reference
      }
      disarm();
      armed = fd;
      listen(fd);
      return undefined;
    },
    stop() {
      stopped = true;
      disarm();
    },
  };
}
