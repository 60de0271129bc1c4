// Back-off state in a small JSON file under root_dir, written atomically (temporary file, then
// rename) and coalesced: at most one write in flight, the latest state always written last.
import { readFileSync } from "node:fs";
import { mkdir, rename, writeFile } from "node:fs/promises";
import { dirname } from "node:path";
import type { Logger } from "../log.ts";
import type { BackoffEntry, BackoffPersistence } from "./backoff.ts";

/** A persistence for Backoff at `path`; a missing or unreadable file starts empty (with a warning when corrupt). */
export function backoffFile(path: string, log: Logger): BackoffPersistence & { flushed(): Promise<void> } {
  let pending: Record<string, BackoffEntry> | undefined;
  let writing: Promise<void> = Promise.resolve();
  let busy = false;

  const drain = async () => {
    busy = true;
    while (pending) {
      const state = pending;
      pending = undefined;
      try {
        await mkdir(dirname(path), { recursive: true });
        await writeFile(`${path}.tmp`, JSON.stringify(state));
        await rename(`${path}.tmp`, path);
      } catch (error) {
        log.warn(`cannot save back-off state to "${path}": ${(error as Error).message}`);
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
        return {};
      }
      try {
        const parsed = JSON.parse(text) as Record<string, BackoffEntry>;
        return Object.fromEntries(
          Object.entries(parsed).filter(([, e]) => Number.isFinite(e?.delayMs) && Number.isFinite(e?.at)),
        );
      } catch (error) {
        log.warn(`ignoring back-off state "${path}": ${(error as Error).message}; crash loops restart from 10s`);
        return {};
      }
    },
    save(entries) {
      pending = entries;
      if (!busy) writing = drain();
    },
    /** Resolves when the latest state is on disk. */
    flushed: () => writing,
  };
}
