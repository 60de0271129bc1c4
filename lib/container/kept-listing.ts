// A runtime adapter's calls wired to its SharedListing (shared-listing.ts), the same on the CRI and on Docker: the
// calls that change what a listing shows make it stale, full lists are kept, and the event stream's events and end.
import type { SharedListing } from "./shared-listing.ts";
import type { Runtime } from "./runtime.ts";

/** The calls that change what a listing shows (a change under way may land on either side of a list). */
const CHANGING = [
  "runPodSandbox",
  "stopPodSandbox",
  "removePodSandbox",
  "createContainer",
  "startContainer",
  "stopContainer",
  "removeContainer",
] as const;

type Changing = Pick<Runtime, (typeof CHANGING)[number]>;
type Listing = Pick<Runtime, "listContainers" | "listPodSandboxes">;

/**
 * `calls` with each change marked on `shared`, each full, unfiltered list recorded (a sized list too: its summaries
 * carry a size besides), and `lastListing` answered from it.
 */
export function keepingListing<C extends Changing & Listing>(
  shared: SharedListing,
  calls: C,
): C & Required<Pick<Runtime, "lastListing">> {
  const wrapped = { ...calls };
  for (const name of CHANGING) {
    const call = calls[name] as (...args: unknown[]) => Promise<unknown>;
    (wrapped as Record<string, unknown>)[name] = (...args: unknown[]) => shared.changing(() => call(...args));
  }
  return {
    ...wrapped,
    async listContainers(options = {}) {
      const token = shared.begin();
      const listed = await calls.listContainers(options);
      if (!options.podUid) shared.recordContainers(token, () => listed);
      return listed;
    },
    async listPodSandboxes(filter = {}) {
      const token = shared.begin();
      const listed = await calls.listPodSandboxes(filter);
      if (!filter.podUid && !filter.state) shared.recordSandboxes(token, () => listed);
      return listed;
    },
    lastListing: (maxAgeMs) => shared.current(maxAgeMs),
  };
}

/**
 * `events` making `shared` stale: every event, the kubelet's containers or not (what the last listing says may be
 * behind it), and the stream's end, however it ends (what it would have told is not known). The adapter itself says
 * when the stream opened (`shared.streaming(true)`): only it knows when the runtime answered.
 */
export async function* staleOnEvents<T>(shared: SharedListing, events: AsyncIterable<T>): AsyncGenerator<T> {
  try {
    for await (const event of events) {
      shared.changed();
      yield event;
    }
  } finally {
    shared.streaming(false);
  }
}
