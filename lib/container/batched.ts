// Turns lookups of one key each, made in the same turn of the event loop, into one bulk call. The Runtime
// port asks for one container's stats at a time; the CRI answers for every container in one
// ListContainerStats, which is how the Go kubelet's CRI stats provider asks (one call, not one per container).

/**
 * `lookup(key)` resolves from one `fetch` of every key asked in the same turn; a key the fetch does not
 * answer rejects with `missing(key)`, and a failed fetch rejects every lookup it served.
 */
export function batched<K, V>(
  fetch: (keys: K[]) => Promise<Map<K, V>>,
  missing: (key: K) => Error,
): (key: K) => Promise<V> {
  type Waiter = { resolve(value: V): void; reject(error: unknown): void };
  let pending: Map<K, Waiter[]> | undefined;

  const flush = async (batch: Map<K, Waiter[]>) => {
    try {
      const found = await fetch([...batch.keys()]);
      for (const [key, waiters] of batch) {
        const value = found.get(key);
        for (const w of waiters) value === undefined ? w.reject(missing(key)) : w.resolve(value);
      }
    } catch (error) {
      for (const waiters of batch.values()) for (const w of waiters) w.reject(error);
    }
  };

  return (key) =>
    new Promise<V>((resolve, reject) => {
      if (!pending) {
        const batch = new Map<K, Waiter[]>();
        pending = batch;
        queueMicrotask(() => {
          pending = undefined;
          void flush(batch);
        });
      }
      pending.set(key, [...(pending.get(key) ?? []), { resolve, reject }]);
    });
}
