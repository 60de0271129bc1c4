// `kubelet fleet apply|delete|describe`: their flags, how the command line becomes a request, and
// which of fleet-apply.ts and fleet-describe.ts answers it.
import { readManifestFile } from "../api/manifest-files.ts";
import { DEFAULT_MAX_MANIFEST_BYTES } from "../api/manifest-text.ts";
import { readManifests } from "../api/manifest.ts";
import type { EtcdClient } from "../sources/etcd-client.ts";
import type { PlacementTarget } from "./fleet-apply.ts";

export const PLACEMENT_VERBS = ["apply", "delete", "describe"];

export type PlacementRequest =
  | { verb: "apply"; file: string; target: PlacementTarget; dryRun: boolean; allowPrivileged: boolean }
  | { verb: "delete"; file?: string; pods: Array<{ namespace: string; name: string }>; dryRun: boolean }
  | { verb: "describe"; kind: "node" | "pod"; name: string; namespace: string };

/** Adds the placement flags to the fleet command. */
export function placementOptions(command: { option(name: string, description: string): unknown }): void {
  command.option("-f, --filename <file>", "apply/delete: the pod manifest (YAML or JSON, one or more pods)");
  command.option("--node <names>", "apply: run the pods on these nodes (comma separated)");
  command.option("--selector <labels>", "apply: run the pods on every node with these labels (key=value,…)");
  command.option("--all-nodes", "apply: run the pods on every node, including nodes that join later");
  command.option("-n, --namespace <namespace>", "delete/describe pod: the pod's namespace (default: default)");
  command.option("--dry-run", "apply/delete: print what would be written, write nothing");
  command.option("--allow-privileged", "apply: accept privileged containers (as kubelet validate)");
}

const flag = (value: unknown) => value === true || value === "true";

/** The command line as a request; `usage` builds the error for a wrong one. */
export function placementRequest(
  verb: string,
  names: string[],
  options: Record<string, unknown>,
  usage: (message: string) => Error,
): PlacementRequest {
  const namespace = typeof options.namespace === "string" ? options.namespace : "default";
  const file = typeof options.filename === "string" ? options.filename : undefined;
  const dryRun = flag(options.dryRun);
  if (verb === "describe") {
    const [kind, name] = names;
    if ((kind !== "node" && kind !== "pod") || !name || names.length > 2)
      throw usage("fleet describe needs node NAME or pod NAME");
    return { verb, kind, name, namespace };
  }
  if (verb === "delete") {
    if (file && names.length === 0) return { verb, file, pods: [], dryRun };
    if (names[0] !== "pod" || names.length < 2 || file)
      throw usage("fleet delete needs pod NAME… (with -n NAMESPACE) or -f FILE");
    return { verb, pods: names.slice(1).map((name) => ({ namespace, name })), dryRun };
  }
  if (!file || names.length > 0) throw usage("fleet apply needs -f FILE and one of --node, --selector, --all-nodes");
  const targets = [options.node !== undefined, options.selector !== undefined, flag(options.allNodes)];
  if (targets.filter(Boolean).length !== 1)
    throw usage("fleet apply needs exactly one of --node NAME, --selector KEY=VALUE, --all-nodes");
  return {
    verb: "apply",
    file,
    target: target(options, usage),
    dryRun,
    allowPrivileged: flag(options.allowPrivileged),
  };
}

function target(options: Record<string, unknown>, usage: (message: string) => Error): PlacementTarget {
  const list = (value: unknown) =>
    String(value)
      .split(",")
      .map((s) => s.trim())
      .filter(Boolean);
  if (options.node !== undefined) {
    const nodes = list(options.node);
    if (nodes.length === 0) throw usage("--node needs a node name");
    return { nodes: [...new Set(nodes)].sort() };
  }
  if (options.selector === undefined) return { selector: {} };
  const selector: Record<string, string> = {};
  for (const pair of list(options.selector)) {
    const [key, value, ...rest] = pair.split("=");
    if (!key || value === undefined || rest.length > 0)
      throw usage(`--selector "${pair}": expected key=value (e.g. --selector gpu=yes)`);
    selector[key] = value;
  }
  if (Object.keys(selector).length === 0) throw usage("--selector needs key=value; use --all-nodes for every node");
  return { selector };
}

/** Answers a request; resolves to the exit code. The answering files load only now: they bring in etcd3 and gRPC. */
export async function runPlacement(
  request: PlacementRequest,
  client: EtcdClient,
  io: { out: NodeJS.WritableStream; err: NodeJS.WritableStream },
): Promise<number> {
  const [{ fleetApply, fleetDelete }, { describeNode, describePod }] = await Promise.all([
    import("./fleet-apply.ts"),
    import("./fleet-describe.ts"),
  ]);
  if (request.verb === "apply") return fleetApply(request.file, request.target, { client, ...io, ...request });
  if (request.verb === "delete") {
    const pods = request.file ? await podsIn(request.file) : request.pods;
    return fleetDelete(pods, { client, ...io, dryRun: request.dryRun });
  }
  const text =
    request.kind === "node"
      ? await describeNode(client, request.name)
      : await describePod(client, request.namespace, request.name);
  if (text === undefined) {
    io.err.write(
      request.kind === "node"
        ? `kubelet fleet describe: node "${request.name}" is neither registered nor given pods in etcd\n`
        : `kubelet fleet describe: pod "${request.namespace}/${request.name}" was not placed with kubelet fleet apply\n`,
    );
    return 1;
  }
  io.out.write(text);
  return 0;
}

/** The pods a manifest file names (for `delete -f`). */
async function podsIn(file: string): Promise<Array<{ namespace: string; name: string }>> {
  const text = await readManifestFile(file, DEFAULT_MAX_MANIFEST_BYTES);
  return readManifests(text ?? "", { source: "file", origin: file }).pods.map((p) => p.metadata);
}
