import { expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, renameSync, rmSync, unlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { watchDirectory } from "./dir-watch.ts";

/** A watcher on a fresh directory and the events it told, with a wait for the next one matching. */
async function watched() {
  const dir = mkdtempSync(join(tmpdir(), "dir-watch-"));
  const watcher = watchDirectory(dir);
  const events: Array<[string, string]> = [];
  const waiters: Array<() => void> = [];
  watcher.on("all", (event, path) => {
    events.push([event, path]);
    for (const wake of waiters.splice(0)) wake();
  });
  await new Promise<void>((resolve) => watcher.on("ready", resolve));
  const seen = async (event: string, path: string) => {
    const deadline = Date.now() + 5000;
    while (!events.some(([e, p]) => e === event && p === path)) {
      if (Date.now() > deadline) throw new Error(`no ${event} ${path} within 5 s: ${JSON.stringify(events)}`);
      await new Promise<void>((resolve) => {
        waiters.push(resolve);
        setTimeout(resolve, 100);
      });
    }
  };
  return { dir, watcher, events, seen };
}

test("a manifest written, renamed into place or removed is told by its path, from one watch on the directory", async () => {
  const w = await watched();
  try {
    writeFileSync(join(w.dir, "a.yaml"), "kind: Pod\n");
    await w.seen("change", join(w.dir, "a.yaml"));
    // An editor's atomic save: written beside, renamed over.
    writeFileSync(join(w.dir, ".b.yaml.tmp"), "kind: Pod\n");
    renameSync(join(w.dir, ".b.yaml.tmp"), join(w.dir, "b.yaml"));
    await w.seen("change", join(w.dir, "b.yaml"));
    unlinkSync(join(w.dir, "a.yaml"));
    w.events.length = 0;
    writeFileSync(join(w.dir, "c.yaml"), "kind: Pod\n");
    await w.seen("change", join(w.dir, "c.yaml"));
    expect(w.events.every(([event, path]) => event === "change" && dirname(path) === w.dir)).toBe(true);
  } finally {
    await w.watcher.close();
    rmSync(w.dir, { recursive: true, force: true });
  }
});

test("the directory removed is told as unlinkDir of the directory", async () => {
  const w = await watched();
  try {
    mkdirSync(join(w.dir, "sub"));
    rmSync(w.dir, { recursive: true, force: true });
    await w.seen("unlinkDir", w.dir);
  } finally {
    await w.watcher.close();
    rmSync(w.dir, { recursive: true, force: true });
  }
});
