// The C library's calls no JavaScript runtime offers, through bun:ffi (the only bun:ffi import): flock(2)
// for the kubelet's lock file, eventfd(2) for the kernel's memory cgroup threshold notifications, errno.
import { KubeletError } from "../api/types.ts";
import { runtimeKind } from "./runtime.ts";

export interface Libc {
  flock(fd: number, operation: number): number;
  /** eventfd(initval, flags): a new file descriptor, or -1 (then errno). */
  eventfd(initval: number, flags: number): number;
  errno(): number;
}
let libc: Promise<Libc> | undefined;

/** libc through bun:ffi, opened once: glibc's libc.so.6, else musl's. */
export function bunLibc(): Promise<Libc> {
  libc ??= (async () => {
    const { dlopen, FFIType, read } = await import("bun:ffi");
    const arch = process.arch === "arm64" ? "aarch64" : "x86_64";
    const symbols = {
      flock: { args: [FFIType.i32, FFIType.i32], returns: FFIType.i32 },
      eventfd: { args: [FFIType.u32, FFIType.i32], returns: FFIType.i32 },
      __errno_location: { args: [], returns: FFIType.ptr },
    } as const;
    const failures: string[] = [];
    for (const name of ["libc.so.6", `libc.musl-${arch}.so.1`, `ld-musl-${arch}.so.1`, "libc.so"]) {
      try {
        const { symbols: c } = dlopen(name, symbols);
        return {
          flock: (fd, operation) => c.flock(fd, operation),
          eventfd: (initval, flags) => c.eventfd(initval, flags),
          errno: () => read.i32(c.__errno_location()!, 0),
        };
      } catch (error) {
        failures.push(`${name}: ${(error as Error).message}`);
      }
    }
    throw new KubeletError("LibcUnavailable", `cannot load the C library: ${failures.join("; ")}`);
  })();
  return libc;
}

const EFD_CLOEXEC = 0o2000000;

/**
 * A new eventfd (close-on-exec), or undefined where this runtime cannot make one (node and deno have no FFI
 * to libc here); an error when the kernel refuses.
 */
export async function createEventFd(): Promise<number | undefined> {
  if (runtimeKind() !== "bun") return undefined;
  const c = await bunLibc();
  const fd = c.eventfd(0, EFD_CLOEXEC);
  if (fd < 0) throw new KubeletError("EventFdFailed", `eventfd(2) failed with errno ${c.errno()}`);
  return fd;
}
