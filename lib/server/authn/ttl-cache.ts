// A map whose entries expire after a time-to-live per entry, read on the injected clock (the webhook caches).
import type { Clock } from "../../clock.ts";

/** Entries kept until their TTL passes; expired ones are dropped when read or when the map grows past `max`. */
export interface TtlCache<V> {
  get(key: string): V | undefined;
  set(key: string, value: V, ttlMs: number): void;
}

export function createTtlCache<V>(clock: Clock, max = 10_000): TtlCache<V> {
  const entries = new Map<string, { value: V; until: number }>();
  return {
    get(key) {
      const entry = entries.get(key);
      if (!entry) return undefined;
      if (entry.until > clock.now()) return entry.value;
      entries.delete(key);
      return undefined;
    },
    set(key, value, ttlMs) {
      if (ttlMs <= 0) return;
      if (entries.size >= max) {
        const now = clock.now();
        for (const [k, e] of entries) if (e.until <= now) entries.delete(k);
        if (entries.size >= max) entries.delete(entries.keys().next().value!);
      }
      entries.set(key, { value, until: clock.now() + ttlMs });
    },
  };
}
