// `kubelet fleet`: every node and pod of a fleet, read from etcd alone (the records fleet mode writes),
// as tables, JSON or YAML, once or followed with --watch.
import { stringifyYaml } from "../api/manifest.ts";
import type { V1Node, V1PodStatus } from "../api/types.ts";
import { fleetKeys } from "../node/status/fleet-reporter.ts";
import type { KubeEvent } from "../node/events/events.ts";
import type { EtcdClient, EtcdEntry } from "../sources/etcd-client.ts";

export interface NodeRow {
  name: string;
  ready: string;
  /** Seconds since the node last renewed its lease; undefined when the lease could not be read. */
  heartbeatAgeSeconds?: number;
  /** Pods whose containers are all running. */
  podsRunning: number;
  podsDesired: number;
  runtime: string;
  kubelet: string;
  node: V1Node;
}

export interface PodRow {
  node: string;
  namespace: string;
  name: string;
  phase: string;
  /** "ready/total" containers. */
  ready: string;
  restarts: number;
  reason: string;
  status: V1PodStatus;
}

export interface EventRow {
  node: string;
  event: KubeEvent & { metadata: { name: string; namespace: string } };
}

export interface FleetView {
  nodes: NodeRow[];
  pods: PodRow[];
  /** Every node's recent events, oldest first. */
  events: EventRow[];
  /** etcd revision the view was read at. */
  revision: number;
}

/** What to show: nodes and pods (all), or one of nodes, pods, events. */
export type FleetSection = "all" | "nodes" | "pods" | "events";

/**
 * Reads the fleet: every node record and, per registered node, its pod statuses and events (`read` leaves either
 * out), with each node's heartbeat age from its lease (`read.leases` false: none). Per node rather than all of /registry/hosts/: that holds
 * every pod's manifest and every node's events too, 5× the statuses at 1,000 nodes × 30 pods.
 */
export async function readFleet(
  client: Pick<EtcdClient, "list" | "listEach" | "leaseTimeToLive">,
  read: { statuses?: boolean; events?: boolean; leases?: boolean } = {},
): Promise<FleetView> {
  // Serializable: each list is answered by the member asked, without a round through the leader (the Kubernetes API
  // serves its lists from a cache the same way). A view may lag a write by a moment; over 1,000 nodes' lists this
  // took 15–25 % off the read (0.55–0.68 s → 0.43–0.47 s for 30,000 pods on a three-member etcd on loopback).
  const serializable = { serializable: true };
  const nodes = await client.list(fleetKeys.nodes, serializable);
  const prefixes = nodes.entries.flatMap(({ key }) => {
    const name = key.slice(fleetKeys.nodes.length);
    return [
      ...(read.statuses !== false ? [fleetKeys.statuses(name)] : []),
      ...(read.events !== false ? [fleetKeys.events(name)] : []),
    ];
  });
  // Many nodes' prefixes to one transaction: one range call per node was 1,000 round trips through etcd3 and grpc-js,
  // most of the read's CPU (profiled, bench/results.md "Fleet rollouts").
  const lists = (await client.listEach(prefixes, serializable)).entries;
  const hosts = { entries: lists.flat() };
  const pods = hosts.entries.flatMap((entry) => podRow(entry) ?? []);
  // Grouped once: each node filtering every pod was 1,000 × 30,000 comparisons, a third of `fleet pods` (profiled).
  const byNode = new Map<string, PodRow[]>();
  for (const pod of pods) byNode.get(pod.node)?.push(pod) ?? byNode.set(pod.node, [pod]);
  const events = hosts.entries
    .flatMap((entry) => eventRow(entry) ?? [])
    .sort((a, b) => a.event.lastTimestamp.localeCompare(b.event.lastTimestamp));
  const rows = await Promise.all(
    nodes.entries.map(async (entry): Promise<NodeRow | undefined> => {
      const node = parse<V1Node>(entry.value);
      const name = node?.metadata?.name;
      if (!node || !name) return undefined;
      const lease =
        entry.lease !== "0" && read.leases !== false
          ? await client.leaseTimeToLive(entry.lease).catch(() => undefined)
          : undefined;
      const own = byNode.get(name) ?? [];
      const ready = node.status?.conditions?.find((c) => c.type === "Ready");
      return {
        name,
        ready:
          ready?.status === "True"
            ? "Ready"
            : ready
              ? `NotReady${ready.message ? ` (${ready.message})` : ""}`
              : "Unknown",
        heartbeatAgeSeconds: lease ? lease.granted - lease.ttl : undefined,
        // Phase Running includes a crash loop (restartPolicy Always): count pods whose containers all run.
        podsRunning: own.filter(
          (p) => p.phase === "Running" && (p.status.containerStatuses ?? []).every((c) => c.state?.running),
        ).length,
        podsDesired: own.length,
        runtime: node.status?.nodeInfo?.containerRuntimeVersion ?? "",
        kubelet: node.status?.nodeInfo?.kubeletVersion ?? "",
        node,
      };
    }),
  );
  return {
    nodes: rows.filter((r): r is NodeRow => r !== undefined).sort((a, b) => a.name.localeCompare(b.name)),
    pods: pods.sort(
      (a, b) => a.node.localeCompare(b.node) || `${a.namespace}/${a.name}`.localeCompare(`${b.namespace}/${b.name}`),
    ),
    events,
    revision: nodes.revision,
  };
}

/** `/registry/hosts/<node>/<kind>/<namespace>/<name>` → its parts, for kind "status" or "events". */
function hostKey(key: string, kind: "status" | "events"): [string, string, string] | undefined {
  const parts = key.slice(fleetKeys.hosts.length).split("/");
  return parts.length === 4 && parts[1] === kind ? [parts[0]!, parts[2]!, parts[3]!] : undefined;
}

function eventRow(entry: EtcdEntry): EventRow | undefined {
  const key = hostKey(entry.key, "events");
  if (!key) return undefined;
  const event = parse<EventRow["event"]>(entry.value);
  return event?.involvedObject ? { node: key[0], event } : undefined;
}

/** A pod's status key → a row; other keys (manifests, events) → undefined. */
function podRow(entry: EtcdEntry): PodRow | undefined {
  const key = hostKey(entry.key, "status");
  if (!key) return undefined;
  const [node, namespace, name] = key;
  const status = parse<V1PodStatus>(entry.value) ?? {};
  const containers = status.containerStatuses ?? [];
  const waiting = containers.find((c) => c.state?.waiting?.reason)?.state?.waiting?.reason;
  const terminated = containers.find((c) => c.state?.terminated?.reason && c.state.terminated.exitCode !== 0)?.state
    ?.terminated?.reason;
  return {
    node,
    namespace,
    name,
    phase: status.phase ?? "Unknown",
    ready: `${containers.filter((c) => c.ready).length}/${containers.length}`,
    restarts: containers.reduce((sum, c) => sum + (c.restartCount ?? 0), 0),
    reason: status.reason ?? waiting ?? terminated ?? "",
    status,
  };
}

function parse<T>(text: string): T | undefined {
  try {
    return JSON.parse(text) as T;
  } catch {
    return undefined;
  }
}

/** kubectl's short ages: 42s, 5m, 3h, 2d. */
export function formatAge(seconds: number | undefined): string {
  if (seconds === undefined) return "<unknown>";
  if (seconds < 120) return `${seconds}s`;
  if (seconds < 7200) return `${Math.floor(seconds / 60)}m`;
  if (seconds < 172800) return `${Math.floor(seconds / 3600)}h`;
  return `${Math.floor(seconds / 86400)}d`;
}

/** The fleet as aligned tables, kubectl style; `now` (ms) dates the events. */
export function formatFleetTable(view: FleetView, section: FleetSection, now: number): string {
  const out: string[] = [];
  if (section === "events") {
    return table(
      ["NODE", "LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"],
      view.events.map(({ node, event }) => [
        node,
        formatAge(Math.max(0, Math.round((now - Date.parse(event.lastTimestamp)) / 1000))),
        event.type,
        event.reason,
        `pod/${event.involvedObject.namespace}/${event.involvedObject.name}`,
        event.count > 1 ? `${event.message} (x${event.count})` : event.message,
      ]),
      "No events reported in etcd.",
    );
  }
  if (section === "all" || section === "nodes") {
    out.push(
      table(
        ["NODE", "STATUS", "HEARTBEAT", "PODS", "RUNTIME", "KUBELET"],
        view.nodes.map((n) => [
          n.name,
          n.ready,
          formatAge(n.heartbeatAgeSeconds),
          `${n.podsRunning}/${n.podsDesired}`,
          n.runtime,
          n.kubelet,
        ]),
        "No nodes registered in etcd.",
      ),
    );
  }
  if (section === "all" || section === "pods") {
    out.push(
      table(
        ["NODE", "POD", "PHASE", "READY", "RESTARTS", "REASON"],
        view.pods.map((p) => [p.node, `${p.namespace}/${p.name}`, p.phase, p.ready, String(p.restarts), p.reason]),
        "No pods reported in etcd.",
      ),
    );
  }
  return out.join("\n");
}

/** JSON or YAML for tools: the rows with the records they were read from. */
export function formatFleetData(view: FleetView, section: FleetSection, format: "json" | "yaml"): string {
  const body = {
    ...(section === "all" || section === "nodes" ? { nodes: view.nodes } : {}),
    ...(section === "all" || section === "pods" ? { pods: view.pods } : {}),
    ...(section === "events" ? { events: view.events } : {}),
  };
  return format === "json" ? JSON.stringify(body) + "\n" : stringifyYaml(body);
}

/** Aligned columns, kubectl style; `empty` when there are no rows. */
export function table(header: string[], rows: string[][], empty: string): string {
  if (rows.length === 0) return empty + "\n";
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  return (
    [header, ...rows]
      .map((r) =>
        r
          .map((cell, i) => cell.padEnd(widths[i]!))
          .join("   ")
          .trimEnd(),
      )
      .join("\n") + "\n"
  );
}

export interface FleetCommandOptions {
  client: EtcdClient;
  section: FleetSection;
  format: "table" | "json" | "yaml";
  watch: boolean;
  out: NodeJS.WritableStream & { isTTY?: boolean };
  signal: AbortSignal;
}

/**
 * Prints the fleet once, or with `watch` again on every change in etcd (and, on a terminal, every 2 s so
 * heartbeat ages stay true) until the signal aborts. JSON output while watching is one document per line.
 */
export async function fleetCommand(options: FleetCommandOptions): Promise<void> {
  const { client, out, signal } = options;
  const render = (view: FleetView) =>
    options.format === "table"
      ? formatFleetTable(view, options.section, Date.now())
      : formatFleetData(view, options.section, options.format);
  // Heartbeats (a lease lookup per node) only where the nodes table shows them.
  const read = {
    statuses: options.section !== "events",
    events: options.section === "events",
    leases: options.section === "all" || options.section === "nodes",
  };
  let view = await readFleet(client, read);
  if (!options.watch) {
    out.write(render(view));
    return;
  }
  const tty = out.isTTY === true && options.format === "table";
  const show = (text: string) =>
    out.write(
      tty
        ? `\x1b[H\x1b[2J${text}`
        : options.format === "yaml"
          ? `---\n${text}`
          : text + (options.format === "table" ? "\n" : ""),
    );
  let shown = render(view);
  show(shown);
  let pending: Promise<void> | undefined;
  let again = false;
  const refresh = () => {
    if (pending) {
      again = true;
      return;
    }
    pending = (async () => {
      do {
        again = false;
        view = await readFleet(client, read).catch(() => view);
        const text = render(view);
        if (text !== shown) show((shown = text));
      } while (again && !signal.aborted);
      pending = undefined;
    })();
  };
  const watch = await client.watch({ prefix: "/registry/" }, view.revision + 1, {
    put: refresh,
    delete: refresh,
  });
  const timer = tty ? setInterval(refresh, 2000) : undefined;
  await new Promise<void>((resolve) => {
    if (signal.aborted) return resolve();
    signal.addEventListener("abort", () => resolve(), { once: true });
    watch.done.then(resolve, resolve);
  });
  if (timer) clearInterval(timer);
  await watch.cancel();
  await pending;
}
