// Pure: the UIDs of pods whose manifest gives none. The Go kubelet hashes a static pod with the
// node's name and its source (pkg/kubelet/config/common.go), so two kubelets — two nodes, or two
// --hostname_override on one host — never share a pod UID and so never a pod cgroup or volume
// directory. Here the UID stays the same across edits (node, source, namespace/name). Releases
// before this one left the node out: a pod that still runs under that earlier UID keeps it, so an
// upgrade adopts its containers instead of restarting them.
import { createHash } from "node:crypto";
import { podSpecHash } from "./hash.ts";
import { ANNOTATION, type Pod } from "./types.ts";

/** The UID a manifest without one gets before the node is known (and the only one, before node UIDs). */
export function sourceUid(source: string, namespace: string, name: string): string {
  return uuidOf(`${source}/${namespace}/${name}`);
}

/** A pod's UID on `node`: stable across edits, different on every node. */
export function nodeUid(node: string, source: string, namespace: string, name: string): string {
  return uuidOf(`${node}/${source}/${namespace}/${name}`);
}

/**
 * Gives each pod whose UID was derived (not written in its manifest) its UID on `node`, unless
 * `keepsEarlierUid` says the earlier, node-less UID must stay (a pod sandbox or container still runs
 * under it, or the runtime could not say).
 */
export function assignNodeUids(node: string, keepsEarlierUid: (uid: string) => boolean): (pod: Pod) => Pod {
  return (pod) => {
    const { name, namespace, uid, annotations } = pod.metadata;
    const source = annotations[ANNOTATION.source] ?? "";
    if (uid !== sourceUid(source, namespace, name) || keepsEarlierUid(uid)) return pod;
    const scoped: Pod = { ...pod, metadata: { ...pod.metadata, uid: nodeUid(node, source, namespace, name) } };
    scoped.metadata.annotations = { ...annotations, [ANNOTATION.hash]: podSpecHash(scoped) };
    return scoped;
  };
}

function uuidOf(text: string): string {
  const hex = createHash("sha256").update(text).digest("hex");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
}
