// runonce's account of its work while it runs. On a terminal: one line per image pulled (bytes and
// percent, redrawn in place) and a line of the pods' progress. Elsewhere (a pipe, a log file): one line
// per image as its pull starts and one as it ends, with its size and time, and nothing redrawn.
import type { LayerProgress } from "../container/runtime.ts";
import type { PullObserver } from "../node/images/images.ts";

export interface RunOnceProgress extends PullObserver {
  /** The pods' line (`1/3 pods settled, waiting for default/web`), shown on a terminal. */
  pods(line: string): void;
}

export interface RunOnceProgressOptions {
  out: NodeJS.WritableStream;
  tty: boolean;
  /** Milliseconds, for the redraw throttle (default Date.now). */
  now?: () => number;
}

/** A terminal is redrawn at most this often while bytes arrive (starts and ends redraw at once). */
const REDRAW_MS = 100;

interface ImageLine {
  layers: Map<string, { current: number; total: number }>;
  text: string;
}

export function createRunOnceProgress(options: RunOnceProgressOptions): RunOnceProgress {
  const now = options.now ?? Date.now;
  const images = new Map<string, ImageLine>();
  let podsLine = "";
  let drawn = 0;
  let drawnAt = -Infinity;

  /** Redraws every line over the ones drawn before (cursor up, clear each line). */
  const draw = () => {
    const lines = [...[...images.values()].map((i) => i.text), ...(podsLine ? [podsLine] : [])];
    options.out.write(`${drawn ? `\x1b[${drawn}F` : ""}${lines.map((line) => `\x1b[2K${line}\n`).join("")}`);
    drawn = lines.length;
    drawnAt = now();
  };

  return {
    started(image) {
      images.set(image, { layers: new Map(), text: `pulling ${image}` });
      if (options.tty) draw();
      else options.out.write(`pulling ${image}\n`);
    },
    progress(image, detail) {
      const line = images.get(image);
      if (!line || !options.tty) return;
      const { sofar, milestone } = downloaded(line.layers, detail);
      if (sofar) line.text = `pulling ${image}  ${sofar}`;
      if (milestone || now() - drawnAt >= REDRAW_MS) draw();
    },
    finished(image, { seconds, sizeBytes, error }) {
      const took = `${seconds.toFixed(1)}s`;
      const text = error
        ? `failed to pull ${image} after ${took}`
        : `pulled ${image}${sizeBytes ? ` (${formatBytes(sizeBytes)})` : ""} in ${took}`;
      if (!options.tty) return void options.out.write(`${text}\n`);
      images.set(image, { layers: new Map(), text });
      draw();
    },
    pods(line) {
      podsLine = line;
      if (options.tty) draw();
    },
  };
}

/**
 * `1.2 MB of 3.4 MB (35%)` over the layers whose size is known, after `detail` (undefined before any is), and
 * whether a layer began or finished its download (drawn at once, however fast the bytes came). A layer
 * counts as whole once downloaded: its later statuses (extracting) carry other figures.
 */
function downloaded(
  layers: ImageLine["layers"],
  detail: LayerProgress,
): { sofar: string | undefined; milestone: boolean } {
  let milestone = false;
  if (detail.layer) {
    const layer = layers.get(detail.layer);
    if (detail.status === "Downloading" && detail.total) {
      milestone = !layer;
      layers.set(detail.layer, { current: detail.current ?? 0, total: detail.total });
    } else if (layer && layer.current < layer.total && /complete|Extracting|Verifying/i.test(detail.status)) {
      milestone = true;
      layer.current = layer.total;
    }
  }
  let current = 0;
  let total = 0;
  for (const layer of layers.values()) {
    current += layer.current;
    total += layer.total;
  }
  if (total === 0) return { sofar: undefined, milestone };
  return {
    sofar: `${formatBytes(current)} of ${formatBytes(total)} (${Math.floor((100 * current) / total)}%)`,
    milestone,
  };
}

/** Docker's human sizes: decimal units, one decimal place (`3.4 MB`). */
export function formatBytes(bytes: number): string {
  const units = ["B", "kB", "MB", "GB", "TB"];
  let value = bytes;
  let unit = 0;
  while (value >= 1000 && unit < units.length - 1) {
    value /= 1000;
    unit++;
  }
  return `${unit === 0 ? value : value.toFixed(1)} ${units[unit]}`;
}
