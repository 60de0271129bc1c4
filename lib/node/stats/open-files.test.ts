import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createOpenFiles, openFilesLimit } from "./open-files.ts";

const dir = mkdtempSync(join(tmpdir(), "kubelet-open-files-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const file = (name: string, text: string) => {
  writeFileSync(join(dir, name), text);
  return join(dir, name);
};

describe("open files", () => {
  test("a file kept open is read again from its start, whatever its size, and shows its new content", () => {
    const files = createOpenFiles({ limit: 10 });
    const path = file("counter", "1\n");
    expect(files.read(path)).toBe("1\n");
    writeFileSync(path, "22\n");
    expect(files.read(path)).toBe("22\n");
    const big = "x".repeat(40_000);
    writeFileSync(path, big);
    expect(files.read(path)).toBe(big);
    expect(files.size()).toBe(1);
  });

  test("a file that fits the buffer is read with one read call, not a second one at its end", () => {
    let reads = 0;
    const files = createOpenFiles(
      { limit: 10 },
      { readSync: (fd, buffer, offset, length, position) => (reads++, readSync(fd, buffer, offset, length, position)) },
    );
    const path = file("one-read", "total_rss 4000\ntotal_cache 5000\n");
    expect(files.read(path)).toBe("total_rss 4000\ntotal_cache 5000\n");
    expect(files.read(path)).toBe("total_rss 4000\ntotal_cache 5000\n");
    expect(reads).toBe(2);
  });

  test("a forgotten file is closed, and opened again by its next read", () => {
    const files = createOpenFiles({ limit: 10 });
    const path = file("forgotten", "1\n");
    files.read(path);
    files.forget(path);
    expect(files.size()).toBe(0);
    // A new file at the path (a new process's /proc entry): the read shows it, not the one kept open before.
    rmSync(path);
    writeFileSync(path, "2\n");
    expect(files.read(path)).toBe("2\n");
    expect(files.size()).toBe(1);
  });

  test("a file not read for three sweeps is closed", () => {
    const files = createOpenFiles({ limit: 10 });
    const kept = file("kept", "k");
    files.read(file("idle", "i"));
    for (let round = 0; round < 4; round++) {
      expect(files.read(kept)).toBe("k");
      expect(files.size()).toBe(2);
      files.sweep();
    }
    expect(files.size()).toBe(1);
  });

  test("a file that is absent or cannot be read reads empty and is not kept open", () => {
    const files = createOpenFiles({ limit: 10 });
    expect(files.read(join(dir, "absent"))).toBe("");
    expect(files.read(dir)).toBe(""); // EISDIR, as a removed cgroup's file answers ENODEV
    expect(files.size()).toBe(0);
  });

  test("beyond the limit a file is read without being kept open", () => {
    const files = createOpenFiles({ limit: 1 });
    expect(files.read(file("a", "a"))).toBe("a");
    expect(files.read(file("b", "b"))).toBe("b");
    expect(files.size()).toBe(1);
  });

  test("the limit is a quarter of the soft open-file limit, 256 where it cannot be read", () => {
    const header = "Limit                     Soft Limit           Hard Limit           Units\n";
    expect(
      openFilesLimit(
        file("limits", `${header}Max open files            1024                 524288               files\n`),
      ),
    ).toBe(256);
    expect(
      openFilesLimit(
        file("limits2", `${header}Max open files            20000                20000                files\n`),
      ),
    ).toBe(5000);
    expect(openFilesLimit(join(dir, "absent"))).toBe(256);
  });
});
