// A pod feed (apiserver/watch.ts PodFeed) the test changes by hand, and a push target that writes into it: what
// the sync loop and the merge store give the API, without either.
import { podKey, type Pod, type PodOperation } from "../api/types.ts";
import { createApiServer } from "../server/apiserver/apiserver.ts";
import type { PodFeed } from "../server/apiserver/watch.ts";
import { FakeClock } from "./fake-clock.ts";
import type { PushTarget } from "../server/push-routes.ts";

/** set() is a new version and a notification, as the sync loop's; push merges pods as the "http" source would. */
export function fakePodFeed(initial: Pod[] = []) {
  let pods = initial;
  let version = 1;
  let reads = 0;
  const listeners = new Set<() => void>();
  const pushes: Array<{ op: PodOperation; pods: Pod[] }> = [];
  const set = (next: Pod[]) => {
    pods = next;
    version++;
    for (const listener of listeners) listener();
  };
  const feed: PodFeed = {
    pods: () => {
      reads++;
      return pods;
    },
    version: () => version,
    onChange(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
  const push: PushTarget = {
    merge(_source, op, changed) {
      pushes.push({ op, pods: changed });
      const keys = new Set(changed.map(podKey));
      const kept = pods.filter((p) => !keys.has(podKey(p)));
      set(op === "REMOVE" ? kept : [...kept, ...changed]);
    },
    mergeConfigs() {},
  };
  return { feed, push, pushes, set, reads: () => reads, pods: () => pods, listeners: () => listeners.size };
}

/** The API app over a fake feed of `pods`, on a fake clock; the feed's controls beside it. */
export function fakeApiServer(pods: Pod[] = []) {
  const fake = fakePodFeed(pods);
  const clock = new FakeClock();
  const api = createApiServer({
    pods: fake.feed,
    push: fake.push,
    clock,
    validation: { allowPrivileged: false },
    maxBytes: 1 << 20,
  });
  return { ...fake, api, clock };
}
