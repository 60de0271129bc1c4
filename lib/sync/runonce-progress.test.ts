// runonce's display: what a terminal shows after the redraws, and the plain lines without one.
import { expect, test } from "bun:test";
import { PassThrough } from "node:stream";
import { createRunOnceProgress, formatBytes } from "./runonce-progress.ts";

function output() {
  const out = new PassThrough();
  let text = "";
  out.on("data", (d) => (text += d));
  return { out, text: () => text };
}

/** What a terminal shows after `text`: cursor-up (ESC[nF) and clear-line (ESC[2K) applied. */
function screen(text: string): string[] {
  const lines: string[] = [];
  let row = 0;
  for (const part of text.split(/(\x1b\[\d*F|\x1b\[2K|\n)/)) {
    const up = /^\x1b\[(\d*)F$/.exec(part);
    if (up) row -= Number(up[1] || 1);
    else if (part === "\x1b[2K") lines[row] = "";
    else if (part === "\n") row++;
    else if (part) lines[row] = (lines[row] ?? "") + part;
  }
  return lines;
}

test("on a terminal each image has one line, redrawn in place with bytes and percent, and the pods' line under them", () => {
  const { out, text } = output();
  let now = 0;
  const progress = createRunOnceProgress({ out, tty: true, now: () => now });
  progress.started("busybox:1.36");
  progress.started("nginx:1.27");
  progress.progress("busybox:1.36", { layer: "a", status: "Downloading", current: 1_000_000, total: 4_000_000 });
  now += 150;
  progress.progress("busybox:1.36", { layer: "a", status: "Downloading", current: 3_000_000, total: 4_000_000 });
  progress.pods("0/2 pods settled, waiting for default/web, default/db");
  expect(screen(text())).toEqual([
    "pulling busybox:1.36  3.0 MB of 4.0 MB (75%)",
    "pulling nginx:1.27",
    "0/2 pods settled, waiting for default/web, default/db",
  ]);
  progress.finished("busybox:1.36", { seconds: 2.04, sizeBytes: 4_400_000 });
  progress.finished("nginx:1.27", { seconds: 3, error: "manifest unknown" });
  progress.pods("2/2 pods settled");
  expect(screen(text())).toEqual([
    "pulled busybox:1.36 (4.4 MB) in 2.0s",
    "failed to pull nginx:1.27 after 3.0s",
    "2/2 pods settled",
  ]);
});

test("on a terminal, byte ticks are drawn at most every 100 ms, a layer's start and end at once", () => {
  const { out, text } = output();
  const progress = createRunOnceProgress({ out, tty: true, now: () => 0 });
  progress.started("busybox:1.36");
  progress.progress("busybox:1.36", { layer: "a", status: "Downloading", current: 1, total: 1000 });
  progress.progress("busybox:1.36", { layer: "a", status: "Downloading", current: 500, total: 1000 });
  expect(screen(text())).toEqual(["pulling busybox:1.36  1 B of 1.0 kB (0%)"]);
  progress.progress("busybox:1.36", { layer: "a", status: "Download complete" });
  expect(screen(text())).toEqual(["pulling busybox:1.36  1.0 kB of 1.0 kB (100%)"]);
});

test("without a terminal, one line per image as its pull starts and one as it ends, nothing redrawn", () => {
  const { out, text } = output();
  const progress = createRunOnceProgress({ out, tty: false });
  progress.started("busybox:1.36");
  progress.progress("busybox:1.36", { layer: "a", status: "Downloading", current: 1, total: 1000 });
  progress.pods("0/1 pods settled");
  progress.finished("busybox:1.36", { seconds: 1.2, sizeBytes: 4_400_000 });
  expect(text()).toBe("pulling busybox:1.36\npulled busybox:1.36 (4.4 MB) in 1.2s\n");
});

test("sizes read as Docker prints them", () => {
  expect([999, 98_304, 8_002_638, 1_500_000_000].map(formatBytes)).toEqual(["999 B", "98.3 kB", "8.0 MB", "1.5 GB"]);
});
