// One watch of a fleet resource (nodes, events) streamed straight from an etcd watch: ADDED for what a list holds
// when no resourceVersion is given, then ADDED/MODIFIED/DELETED as etcd's keys change, resourceVersion = etcd's
// revision (so it resumes on any fleet serve), BOOKMARKs when asked, and 410 Expired when etcd has compacted the
// revision asked for (the client relists, as it does against kube-apiserver).
import type { Context } from "hono";
import type { Clock } from "../../clock.ts";
import type { EtcdClient, EtcdEntry, EtcdWatch } from "../../sources/etcd-client.ts";
import { expired } from "./api-status.ts";
import { toTable, type ApiObject, type Printer } from "./table-print.ts";
import { wantsTable } from "./table.ts";
import { bookmarkObject, watchQuery, writeWatch } from "./watch-writer.ts";

/** A resource whose objects are etcd keys under one prefix. */
export interface EtcdWatchSource<T extends ApiObject> {
  client: Pick<EtcdClient, "watch">;
  clock: Clock;
  kind: string;
  prefix: string;
  printer: Printer<T>;
  /** The objects now and the revision they were read at. */
  list(): Promise<{ objects: T[]; revision: number }>;
  /** The served object for a put of `entry`; undefined when the key is not one of this resource's. */
  decode(entry: EtcdEntry): Promise<T | undefined>;
  /** The object a deleted key held, as far as the key tells; undefined when it is not one of this resource's. */
  gone(key: string): T | undefined;
  /** The object's etcd key, so a DELETED carries what the watch last sent for it. */
  keyOf(object: T): string;
  matches(object: T): boolean;
}

/** A resourceVersion older than etcd's compaction: etcd refuses the watch with "required revision has been compacted". */
export function isCompacted(error: unknown): boolean {
  return /compacted/i.test(error instanceof Error ? error.message : String(error));
}

/** A DELETED carries the resourceVersion of the delete. */
function stamped<T extends ApiObject>(object: T, revision: number): T {
  return { ...object, metadata: { ...object.metadata, resourceVersion: String(revision) } };
}

/** The watch response for `c`'s query (resourceVersion, allowWatchBookmarks, timeoutSeconds). */
export function streamEtcdWatch<T extends ApiObject>(c: Context, source: EtcdWatchSource<T>): Response {
  const { from, bookmarks, timeoutMs } = watchQuery(c);
  const table = wantsTable(c.req.header("accept"));
  let revision = from ?? 0;
  return writeWatch({
    clock: source.clock,
    signal: c.req.raw.signal,
    timeoutMs,
    bookmarks,
    bookmark: () => bookmarkObject(source.kind, revision),
    render: (object, first) => {
      if (!table) return object;
      return toTable(source.printer.columns, [object as T], (o) => source.printer.cells(o, source.clock.now()), {
        resourceVersion: String(((object as T).metadata as { resourceVersion?: string }).resourceVersion ?? ""),
        includeObject: c.req.query("includeObject"),
        noHeaders: !first,
      });
    },
    async start(sink) {
      let watch: EtcdWatch | undefined;
      const stop = () => void watch?.cancel();
      const fail = (error: unknown) => {
        const status = isCompacted(error)
          ? expired(`too old resource version: ${from}: etcd has compacted it, list again`).status
          : {
              kind: "Status",
              apiVersion: "v1",
              status: "Failure",
              message: String(error),
              reason: "InternalError",
              code: 500,
            };
        sink.fail(status);
      };
      /** What this watch last sent per key: a DELETED repeats it, and a MODIFIED out of the selection is a DELETED. */
      const sent = new Map<string, T>();
      const emit = (type: "ADDED" | "MODIFIED" | "DELETED", key: string, object: T) => {
        const before = sent.get(key);
        if (type === "DELETED") {
          sent.delete(key);
          if (before || source.matches(object)) sink.send("DELETED", stamped(before ?? object, revision));
          return;
        }
        if (!source.matches(object)) {
          if (before) sink.send("DELETED", object);
          sent.delete(key);
          return;
        }
        sent.set(key, object);
        sink.send(before ? "MODIFIED" : "ADDED", object);
      };
      try {
        if (from === undefined) {
          const now = await source.list();
          revision = now.revision;
          for (const object of now.objects) emit("ADDED", source.keyOf(object), object);
        }
        // etcd's events reach the stream in their order though decoding a put may wait on etcd (a node's lease).
        let queue = Promise.resolve();
        const then = (work: () => Promise<void> | void) => {
          queue = queue.then(work).catch(fail);
        };
        watch = await source.client.watch({ prefix: source.prefix }, revision + 1, {
          put: (entry) =>
            then(async () => {
              const object = await source.decode(entry);
              revision = Math.max(revision, entry.modRevision);
              if (object) emit("MODIFIED", entry.key, object);
            }),
          // The client's delete event carries no revision: the change is stamped one past the newest seen.
          delete: (key) =>
            then(() => {
              const object = source.gone(key);
              if (!object) return;
              revision++;
              emit("DELETED", key, object);
            }),
        });
        watch.done.catch(fail);
      } catch (error) {
        fail(error);
      }
      return stop;
    },
  });
}
