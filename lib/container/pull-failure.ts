// Image pull failures that cannot clear by themselves (the registry's name does not resolve, or a registry that
// answered has no such image), told apart by the words Docker and containerd use, and the operator doc that helps.

/** Where an operator reads what to do: offline images, a registry mirror, the sandbox image setting. */
export const OFFLINE_IMAGES_DOC = 'see "Air-gapped nodes" in docs/operations.md';

/** Why a pull will fail again however often it is retried. */
export type LastingPullFailure = "name-resolution" | "not-found";

/**
 * Go's resolver (`dial tcp: lookup registry.k8s.io on 10.0.0.2:53: no such host`, `… server misbehaving`, a DNS
 * server that does not answer), glibc's through cgo, and Node's or Bun's (`ENOTFOUND`).
 */
const NAME_RESOLUTION = [
  /\blookup \S+(?: on \S+)?: /,
  /\bno such host\b/,
  /\bserver misbehaving\b/,
  /\bTemporary failure in name resolution\b/,
  /\bENOTFOUND\b/,
];

/**
 * Docker (`manifest for r/x:1 not found: manifest unknown`, Docker Hub's `repository does not exist`), containerd
 * (`failed to resolve reference "r/x:1": r/x:1: not found`) and the registry API's own codes.
 */
const NOT_FOUND = [
  /\bmanifest unknown\b/,
  /\bmanifest for \S+ not found\b/,
  /\bfailed to resolve reference "[^"]*": \S+: not found\b/,
  /\brepository does not exist\b/,
  /\bname unknown\b/,
];

/** The kind of lasting failure a pull's message reports, or undefined for one that may clear (a refused or slow registry). */
export function lastingPullFailure(message: string): LastingPullFailure | undefined {
  if (NAME_RESOLUTION.some((re) => re.test(message))) return "name-resolution";
  if (NOT_FOUND.some((re) => re.test(message))) return "not-found";
  return undefined;
}

/** The message with the operator doc named after it (once). */
export function withOfflineHint(message: string): string {
  return message.includes(OFFLINE_IMAGES_DOC) ? message : `${message}; ${OFFLINE_IMAGES_DOC}`;
}
