// Back-off state in a small JSON file under root_dir (state-file.ts: atomic, coalesced writes).
import type { Logger } from "../../log.ts";
import type { BackoffEntry, BackoffPersistence } from "../flowcontrol/backoff.ts";
import { stateFile } from "./state-file.ts";

/** A persistence for Backoff at `path`; a missing or unreadable file starts empty (with a warning when corrupt). */
export function backoffFile(path: string, log: Logger): BackoffPersistence & { flushed(): Promise<void> } {
  return stateFile(path, log, {
    what: "back-off state",
    consequence: "crash loops restart from 10s",
    empty: () => ({}),
    accept: (parsed) =>
      Object.fromEntries(
        Object.entries(parsed as Record<string, BackoffEntry>).filter(
          ([, e]) => Number.isFinite(e?.delayMs) && Number.isFinite(e?.at),
        ),
      ),
  });
}
