// State the kubelet keeps across restarts in a small JSON file under root_dir (crash-loop back-off, resource
// allocations), written atomically (temporary file, then rename) and coalesced: at most one write in flight, the
// latest state always written last.
import { readFileSync } from "node:fs";
import { mkdir, rename, writeFile } from "node:fs/promises";
import { dirname } from "node:path";
import type { Logger } from "../../log.ts";

/** What a state file holds, how its contents are checked and what is lost without them (for the warnings). */
export interface StateFileOptions<T> {
  /** Names the state in warnings: `back-off state`. */
  what: string;
  /** What a corrupt file costs, after "ignoring …": `crash loops restart from 10s`. */
  consequence: string;
  /** The state a missing or corrupt file stands for. */
  empty(): T;
  /** The state from the parsed file, dropping what does not check out. */
  accept(parsed: unknown): T;
}

/** A state file at `path`: load() reads it now, save() writes in the background, flushed() awaits the last write. */
export function stateFile<T>(
  path: string,
  log: Logger,
  options: StateFileOptions<T>,
): { load(): T; save(state: T): void; flushed(): Promise<void> } {
  let pending: T | undefined;
  let writing: Promise<void> = Promise.resolve();
  let busy = false;

  const drain = async () => {
    busy = true;
    while (pending !== undefined) {
      const state = pending;
      pending = undefined;
      try {
        await mkdir(dirname(path), { recursive: true });
        await writeFile(`${path}.tmp`, JSON.stringify(state));
        await rename(`${path}.tmp`, path);
      } catch (error) {
        log.warn(`cannot save ${options.what} to "${path}": ${(error as Error).message}`);
      }
    }
    busy = false;
  };

  return {
    load() {
      let text: string;
      try {
        text = readFileSync(path, "utf8");
      } catch {
        return options.empty();
      }
      try {
        return options.accept(JSON.parse(text));
      } catch (error) {
        log.warn(`ignoring ${options.what} "${path}": ${(error as Error).message}; ${options.consequence}`);
        return options.empty();
      }
    },
    save(state) {
      pending = state;
      if (!busy) writing = drain();
    },
    flushed: () => writing,
  };
}
