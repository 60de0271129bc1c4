// The file source on a real directory, with the patterns real editors use.
import { afterEach, describe, expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { watch as chokidarWatch } from "chokidar";
import { names, recordSnapshots, type SnapshotRecorder } from "../testing/snapshots.ts";
import { FakeClock } from "../testing/fake-clock.ts";
import { readManifestFile } from "../api/manifest-files.ts";
import { createFileSource, type WatchManifests } from "./file.ts";

const pod = (name: string, image = "busybox:1.35") =>
  `apiVersion: v1\nkind: Pod\nmetadata: {name: ${name}}\nspec:\n  containers: [{name: c, image: "${image}"}]\n`;
const waitUntil = async (check: () => boolean) => {
  for (let i = 0; i < 200 && !check(); i++) await new Promise((r) => setTimeout(r, 10));
};
const imageOf = (s: { pods: Array<{ spec: { containers: Array<{ image?: string }> } }> }) =>
  s.pods[0]?.spec.containers[0]?.image;

describe("file source", () => {
  let dir: string;
  let recorder: SnapshotRecorder | undefined;
  const watch = (path = dir) => (recorder = recordSnapshots(createFileSource({ path, checkFrequency: 60_000 })));
  afterEach(async () => {
    await recorder?.stop();
    recorder = undefined;
    rmSync(dir, { recursive: true, force: true });
  });
  const fresh = () => (dir = mkdtempSync(join(tmpdir(), "kubelet-file-source-")));

  test("reports the pods of every manifest file in the directory, in name order", async () => {
    fresh();
    writeFileSync(join(dir, "b.yaml"), pod("b"));
    writeFileSync(
      join(dir, "a.json"),
      JSON.stringify({
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name: "a" },
        spec: { containers: [{ name: "c", image: "x:1" }] },
      }),
    );
    expect(names(await watch().next((s) => s.pods.length === 2))).toEqual(["a", "b"]);
  });

  test("sees an edit written in place in well under a second", async () => {
    fresh();
    writeFileSync(join(dir, "web.yaml"), pod("web", "busybox:1"));
    const r = watch();
    await r.next((s) => s.pods.length === 1);
    writeFileSync(join(dir, "web.yaml"), pod("web", "busybox:2"));
    expect(imageOf(await r.next((s) => imageOf(s) === "busybox:2", 1000))).toBe("busybox:2");
  });

  test("sees an atomic save (write a temp file, rename it over the manifest)", async () => {
    fresh();
    writeFileSync(join(dir, "web.yaml"), pod("web", "busybox:1"));
    const r = watch();
    await r.next((s) => s.pods.length === 1);
    writeFileSync(join(dir, ".web.yaml.tmp"), pod("web", "busybox:3"));
    renameSync(join(dir, ".web.yaml.tmp"), join(dir, "web.yaml"));
    expect(imageOf(await r.next((s) => imageOf(s) === "busybox:3", 1000))).toBe("busybox:3");
  });

  test("sees the last of two edits written back to back (inside chokidar's change throttle)", async () => {
    fresh();
    writeFileSync(join(dir, "web.yaml"), pod("web", "busybox:1"));
    const r = watch();
    await r.next((s) => s.pods.length === 1);
    writeFileSync(join(dir, "web.yaml"), pod("web", "busybox:2"));
    await r.next((s) => imageOf(s) === "busybox:2", 1000);
    writeFileSync(join(dir, "web.yaml"), pod("web", "busybox:3"));
    expect(imageOf(await r.next((s) => imageOf(s) === "busybox:3", 1000))).toBe("busybox:3");
  });

  test("never runs editor backups, swap files, dotfiles or other extensions", async () => {
    fresh();
    for (const name of [
      "web.yaml~",
      ".web.yaml.swp",
      ".hidden.yaml",
      "web.yaml.bak",
      "web.yaml.orig",
      "#web.yaml#",
      "notes.txt",
      "4913",
    ])
      writeFileSync(join(dir, name), pod("sneaky"));
    writeFileSync(join(dir, "real.yml"), pod("real"));
    const r = watch();
    expect(names(await r.next((s) => s.pods.length > 0))).toEqual(["real"]);
  });

  test("keeps a file's last good pods while it does not parse, and reports it", async () => {
    fresh();
    writeFileSync(join(dir, "web.yaml"), pod("web"));
    const r = watch();
    await r.next((s) => s.pods.length === 1);
    writeFileSync(join(dir, "web.yaml"), "apiVersion: v1\nkind: Pod\nmetadata: {name: web\n");
    const broken = await r.next((s) => s.rejected.length === 1);
    expect(names(broken)).toEqual(["web"]);
    expect(broken.rejected[0]!.issues[0]!.detail).toContain("keeping the last good version of its pods");
    writeFileSync(join(dir, "web.yaml"), pod("web", "busybox:9"));
    expect((await r.next((s) => s.rejected.length === 0)).pods[0]!.spec.containers[0]!.image).toBe("busybox:9");
  });

  test("refuses a file over the size limit and keeps that file's last good pods", async () => {
    fresh();
    writeFileSync(join(dir, "web.yaml"), pod("web"));
    const source = createFileSource({ path: dir, checkFrequency: 60_000, maxBytes: 4096 });
    expect(names(await source.readOnce())).toEqual(["web"]);
    writeFileSync(join(dir, "web.yaml"), pod("web", `busybox:${"1".repeat(5000)}`));
    const over = await source.readOnce();
    expect(names(over)).toEqual(["web"]);
    expect(imageOf(over)).toBe("busybox:1.35");
    expect(over.rejected.map((r) => `${r.origin}: ${r.issues[0]!.type}: ${r.issues[0]!.detail}`)).toEqual([
      `${join(dir, "web.yaml")}: Too long: may not be more than 4096 bytes: split it into several manifests or raise --max_manifest_bytes; keeping the last good version of its pods`,
    ]);
  });

  test("a symlink to a FIFO or a symlink loop named like a manifest is reported, never waited on; the pods beside it run", async () => {
    fresh();
    writeFileSync(join(dir, "good.yaml"), pod("good"));
    expect(spawnSync("mkfifo", [join(dir, ".pipe")]).status).toBe(0);
    symlinkSync(join(dir, ".pipe"), join(dir, "fifo.yaml"));
    symlinkSync(join(dir, "loop.yaml"), join(dir, "loop.yaml"));
    const snapshot = await createFileSource({ path: dir, checkFrequency: 60_000 }).readOnce();
    expect(names(snapshot)).toEqual(["good"]);
    expect(snapshot.rejected.map((r) => r.origin).sort()).toEqual([join(dir, "fifo.yaml"), join(dir, "loop.yaml")]);
    expect(snapshot.rejected.map((r) => r.issues[0]!.detail).join("\n")).toMatch(
      /not a regular file[^]*ELOOP|ELOOP[^]*not a regular file/,
    );
  });

  test("reads a directory of 10,000 manifests", async () => {
    fresh();
    for (let i = 0; i < 10_000; i++) writeFileSync(join(dir, `p${String(i).padStart(5, "0")}.yaml`), pod(`p${i}`));
    const snapshot = await createFileSource({ path: dir, checkFrequency: 60_000 }).readOnce();
    expect(snapshot.pods.length).toBe(10_000);
    expect(snapshot.rejected).toEqual([]);
  }, 60_000);

  test("removes a deleted file's pods and sees it again when recreated", async () => {
    fresh();
    writeFileSync(join(dir, "web.yaml"), pod("web"));
    const r = watch();
    await r.next((s) => s.pods.length === 1);
    rmSync(join(dir, "web.yaml"));
    await r.next((s) => s.pods.length === 0);
    writeFileSync(join(dir, "web.yaml"), pod("web"));
    expect(names(await r.next((s) => s.pods.length === 1))).toEqual(["web"]);
  });

  test("a missing directory is not ready (naming the path and the fix) until it appears", async () => {
    fresh();
    const path = join(dir, "later");
    const r = watch(path);
    const first = await r.next(() => true);
    expect(first.pods).toEqual([]);
    expect(first.notReady).toContain(`manifest path "${path}" does not exist`);
    expect(first.notReady).toContain("check -c/--config for a typo");
    mkdirSync(path);
    writeFileSync(join(path, "web.yaml"), pod("web"));
    expect(names(await r.next((s) => s.pods.length === 1, 3000))).toEqual(["web"]);
    writeFileSync(join(path, "api.yaml"), pod("api"));
    expect(names(await r.next((s) => s.pods.length === 2, 3000))).toEqual(["api", "web"]);
  });

  test("watches an existing directory by itself, never its parent (a busy /tmp would cost a look per change)", async () => {
    fresh();
    const watched: string[][] = [];
    const recording: WatchManifests = (paths, options) => (watched.push(paths), chokidarWatch(paths, options));
    const r = (recorder = recordSnapshots(createFileSource({ path: dir, checkFrequency: 60_000, watch: recording })));
    await r.next(() => true);
    expect(watched).toEqual([[dir]]);
  });

  test("watches a missing directory through its parent, then by itself once it appears", async () => {
    fresh();
    const path = join(dir, "later");
    const watched: string[][] = [];
    const recording: WatchManifests = (paths, options) => (watched.push(paths), chokidarWatch(paths, options));
    const r = (recorder = recordSnapshots(createFileSource({ path, checkFrequency: 60_000, watch: recording })));
    await r.next(() => true);
    mkdirSync(path);
    writeFileSync(join(path, "web.yaml"), pod("web"));
    await r.next((s) => s.pods.length === 1, 3000);
    expect(watched).toEqual([[path, dir], [path]]);
  });

  test("sees a removed directory come back with new manifests", async () => {
    fresh();
    const path = join(dir, "manifests");
    mkdirSync(path);
    writeFileSync(join(path, "web.yaml"), pod("web"));
    const r = watch(path);
    await r.next((s) => s.pods.length === 1);
    rmSync(path, { recursive: true });
    await r.next((s) => s.pods.length === 0, 3000);
    mkdirSync(path);
    writeFileSync(join(path, "api.yaml"), pod("api"));
    expect(names(await r.next((s) => s.pods.length === 1, 3000))).toEqual(["api"]);
  });

  test("notices a directory that appeared at the periodic re-list even when no watch event said so", async () => {
    fresh();
    const path = join(dir, "later");
    const clock = new FakeClock();
    const watched: string[][] = [];
    let restarted!: () => void;
    const second = new Promise<void>((resolve) => (restarted = resolve));
    // A watcher that never reports anything: only the re-list can see the directory appear.
    const blind: WatchManifests = (paths) => {
      if (watched.push(paths) === 2) restarted();
      return { on: () => undefined, close: async () => {} };
    };
    const r = (recorder = recordSnapshots(createFileSource({ path, checkFrequency: 60_000, clock, watch: blind })));
    await r.next(() => true);
    mkdirSync(path);
    await clock.advance(60_000);
    await second;
    expect(watched).toEqual([[path, dir], [path]]);
  });

  test("a missing path is logged at once, again every minute while it lasts, and its end once", async () => {
    fresh();
    const path = join(dir, "manifets");
    const clock = new FakeClock();
    const lines: string[] = [];
    const log = {
      debug() {},
      info: (m: string) => lines.push(`info ${m}`),
      error() {},
      warn: (m: string) => lines.push(`warn ${m}`),
      child: () => log,
    };
    const blind: WatchManifests = () => ({ on: () => undefined, close: async () => {} });
    const r = (recorder = recordSnapshots(
      createFileSource({ path, checkFrequency: 20_000, clock, watch: blind, log }),
    ));
    await r.next((s) => s.notReady !== undefined);
    await clock.advance(20_000);
    await clock.advance(20_000);
    expect(lines).toHaveLength(1);
    await clock.advance(20_000);
    await waitUntil(() => lines.length === 2);
    expect(lines[1]).toBe(lines[0]!);
    expect(lines[0]).toStartWith(`warn manifest path "${path}" does not exist`);
    mkdirSync(path);
    await clock.advance(20_000);
    await r.next((s) => s.notReady === undefined);
    expect(lines.slice(2)).toEqual([`info manifest path "${path}" is readable now: its pods are synced`]);
  });

  test("a KubeletConfiguration given as the path is not ready, and the reason names --config_file", async () => {
    fresh();
    const file = join(dir, "kubelet-config.yaml");
    writeFileSync(
      file,
      "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nstaticPodPath: /etc/kubelet\n",
    );
    const r = watch(file);
    const snapshot = await r.next(() => true);
    expect(snapshot.notReady).toBe(
      `"${file}" is a KubeletConfiguration, not a pod manifest: pass it with --config_file (-c/--config names the static pod manifest file or directory); no pod is started or stopped on its account`,
    );
    writeFileSync(file, pod("web"));
    expect(names(await r.next((s) => s.notReady === undefined, 3000))).toEqual(["web"]);
  });

  test("a file of another kind given as the path is not ready; the same file in a directory is only rejected", async () => {
    fresh();
    const file = join(dir, "deploy.yaml");
    writeFileSync(file, "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\n");
    const single = await createFileSource({ path: file, checkFrequency: 60_000 }).readOnce();
    expect(single.notReady).toStartWith(`"${file}" is not a pod manifest (kind: Unsupported value: "Deployment"`);
    const inDir = await createFileSource({ path: dir, checkFrequency: 60_000 }).readOnce();
    expect(inDir.notReady).toBeUndefined();
    expect(inDir.rejected).toHaveLength(1);
    const settings = join(dir, "kubelet.yaml");
    writeFileSync(settings, "sync_frequency: 10s\nstaticPodPath: /etc/kubelet/manifests\n");
    const config = await createFileSource({ path: settings, checkFrequency: 60_000 }).readOnce();
    expect(config.notReady).toContain("kubelet settings are read with --config_file");
  });

  test("watches a single manifest file", async () => {
    fresh();
    const file = join(dir, "only.yaml");
    writeFileSync(file, pod("only", "busybox:1"));
    const r = watch(file);
    await r.next((s) => s.pods.length === 1);
    writeFileSync(file, pod("only", "busybox:2"));
    expect(imageOf(await r.next((s) => imageOf(s) === "busybox:2", 1000))).toBe("busybox:2");
  });

  test("re-lists every check period even without watch events", async () => {
    fresh();
    const clock = new FakeClock();
    // A watcher that never reports anything: only the periodic re-list can see the new file.
    const blind: WatchManifests = () => ({ on: () => undefined, close: async () => {} });
    const r = (recorder = recordSnapshots(
      createFileSource({ path: dir, checkFrequency: 60_000, clock, watch: blind }),
    ));
    expect(names(await r.next(() => true))).toEqual([]);
    writeFileSync(join(dir, "a.yaml"), pod("a"));
    await clock.advance(59_999);
    // No read was started before the period ended: the re-list timer is the only one, still pending.
    expect(clock.pendingTimers).toBe(1);
    expect(r.snapshots).toHaveLength(1);
    await clock.advance(1);
    expect(names(await r.next((s) => s.pods.length > 0))).toEqual(["a"]);
  });

  describe("reads only what changed", () => {
    const counted = () => {
      const read: string[] = [];
      const readFile: typeof readManifestFile = (file, maxBytes) => (read.push(file), readManifestFile(file, maxBytes));
      return { read, readFile };
    };

    test("a re-list of unchanged manifests stats them and reads none; an edited one is read again", async () => {
      fresh();
      for (let i = 0; i < 110; i++) writeFileSync(join(dir, `p${i}.yaml`), pod(`p${i}`));
      const { read, readFile } = counted();
      const source = createFileSource({ path: dir, checkFrequency: 60_000, readFile });
      expect((await source.readOnce()).pods).toHaveLength(110);
      expect(read).toHaveLength(110);
      read.length = 0;
      expect((await source.readOnce()).pods).toHaveLength(110);
      expect(read).toEqual([]);
      writeFileSync(join(dir, "p7.yaml"), pod("p7", "busybox:2"));
      const after = await source.readOnce();
      expect(read).toEqual([join(dir, "p7.yaml")]);
      expect(after.pods.find((p) => p.metadata.name === "p7")?.spec.containers[0]?.image).toBe("busybox:2");
    });

    test("a file that does not parse is reported again at every re-list without being read again", async () => {
      fresh();
      writeFileSync(join(dir, "bad.yaml"), "kind: Pod\n  : [");
      const { read, readFile } = counted();
      const source = createFileSource({ path: dir, checkFrequency: 60_000, readFile });
      const first = await source.readOnce();
      const second = await source.readOnce();
      expect(read).toHaveLength(1);
      expect(second.rejected).toEqual(first.rejected);
      expect(second.rejected).toHaveLength(1);
    });

    test("a removed and recreated file with the same bytes is read again", async () => {
      fresh();
      const file = join(dir, "web.yaml");
      writeFileSync(file, pod("web"));
      const { read, readFile } = counted();
      const source = createFileSource({ path: dir, checkFrequency: 60_000, readFile });
      await source.readOnce();
      rmSync(file);
      expect((await source.readOnce()).pods).toEqual([]);
      writeFileSync(file, pod("web"));
      expect(names(await source.readOnce())).toEqual(["web"]);
      expect(read).toEqual([file, file]);
    });

    test("a watch event re-reads its file even when its stat is unchanged", async () => {
      fresh();
      const file = join(dir, "web.yaml");
      writeFileSync(file, pod("web"));
      const { read, readFile } = counted();
      const listeners: Array<(event: string, path: string) => void> = [];
      const scripted: WatchManifests = () => ({
        on: (event: string, listener: (...args: never[]) => void) => {
          if (event === "all") listeners.push(listener as (event: string, path: string) => void);
        },
        close: async () => {},
      });
      const r = (recorder = recordSnapshots(
        createFileSource({ path: dir, checkFrequency: 60_000, watch: scripted, readFile, debounceMs: 1 }),
      ));
      await r.next((s) => s.pods.length === 1);
      await waitUntil(() => read.length === 1);
      for (const listener of listeners) listener("change", file);
      await waitUntil(() => read.length === 2);
      expect(read).toEqual([file, file]);
    });
  });
});
