// authorization.mode RBAC: the Authorizer over --authorization_policy_file. The file is read at start (a
// bad file refuses to start) and again when it changes (a watch on its folder, and a poll that also sees
// symlink swaps); an edit with errors is logged with its file, field paths and fixes, and the last good
// policy stays in force.
import { createHash } from "node:crypto";
import { watch } from "node:fs";
import { basename, dirname } from "node:path";
import { readManifestFile } from "../../api/manifest-files.ts";
import { KubeletError } from "../../api/types.ts";
import { systemClock, type Clock, type Timer } from "../../clock.ts";
import { silentLogger, type Logger } from "../../log.ts";
import type { Authorizer } from "../authorizer.ts";
import { evaluatePolicy } from "./evaluate.ts";
import { describePolicy, formatPolicyIssue, readPolicy, type PolicyIssue } from "./policy-file.ts";

export interface RbacAuthorizerOptions {
  /** The policy file (--authorization_policy_file). */
  file: string;
  log?: Logger;
  /** How often the file is read again whatever the watch says, ms (default 10 s). */
  pollInterval?: number;
}

export interface RbacAuthorizerDeps {
  clock?: Clock;
  readFile?: (file: string) => Promise<Uint8Array>;
  /** Calls `onChange` when the file may have changed; returns the stop function. Default: fs.watch on its folder. */
  watch?: (file: string, onChange: () => void) => () => void;
}

/** What one reload did. */
export type ReloadOutcome = "unchanged" | "reloaded" | "kept";

export interface RbacAuthorizer extends Authorizer {
  /** Reads the file now (the watch and the poll call this); an edit with errors keeps the last good policy. */
  reload(): Promise<ReloadOutcome>;
  stop(): void;
}

/** Events of one save arrive together (truncate, write, rename): one read after them. */
const SETTLE_MS = 100;

/** Loads the policy file (rejecting with code InvalidConfig when it is missing or has errors) and keeps it current. */
export async function createRbacAuthorizer(
  options: RbacAuthorizerOptions,
  deps: RbacAuthorizerDeps = {},
): Promise<RbacAuthorizer> {
  const { file } = options;
  const log = options.log ?? silentLogger;
  const clock = deps.clock ?? systemClock;
  const read = deps.readFile ?? readPolicyFile;
  const errorsOf = (issues: PolicyIssue[]) => issues.filter((i) => i.severity === "error");
  const warn = (issues: PolicyIssue[]) => {
    for (const issue of issues.filter((i) => i.severity === "warning")) log.warn(formatPolicyIssue(issue));
  };

  if (!file)
    throw new KubeletError(
      "InvalidConfig",
      "authorization.mode RBAC needs its policy file: give --authorization_policy_file (authorization.policyFile), a YAML file of ClusterRoles and ClusterRoleBindings",
    );
  let bytes: Uint8Array;
  try {
    bytes = await read(file);
  } catch (error) {
    throw new KubeletError(
      "InvalidConfig",
      `cannot read --authorization_policy_file "${file}" (authorization.mode RBAC): ${describeReadError(error)}`,
    );
  }
  const first = readPolicy(bytes, file);
  if (errorsOf(first.issues).length)
    throw new KubeletError(
      "InvalidConfig",
      `cannot load --authorization_policy_file "${file}": ${errorsOf(first.issues).map(formatPolicyIssue).join("; ")}`,
    );
  warn(first.issues);
  let policy = first.policy;
  let loadedAt = new Date(clock.now()).toISOString();
  let seen = digest(bytes);
  let unreadable: string | undefined;
  log.info(`authorization policy "${file}" loaded: ${describePolicy(policy)}`);

  const reloadOnce = async (): Promise<ReloadOutcome> => {
    let next: Uint8Array;
    try {
      next = await read(file);
    } catch (error) {
      const why = describeReadError(error);
      if (why !== unreadable)
        log.warn(`cannot read authorization policy "${file}": ${why}; keeping the policy loaded at ${loadedAt}`);
      unreadable = why;
      return "kept";
    }
    unreadable = undefined;
    const hash = digest(next);
    if (hash === seen) return "unchanged";
    // A bad edit is reported once, not on every poll until it is fixed.
    seen = hash;
    const loaded = readPolicy(next, file);
    const errors = errorsOf(loaded.issues);
    if (errors.length) {
      log.error(
        `cannot reload authorization policy "${file}", keeping the policy loaded at ${loadedAt}: ${errors.map(formatPolicyIssue).join("; ")}`,
        { file, issues: errors.map(formatPolicyIssue) },
      );
      return "kept";
    }
    warn(loaded.issues);
    policy = loaded.policy;
    loadedAt = new Date(clock.now()).toISOString();
    log.info(`authorization policy "${file}" reloaded: ${describePolicy(policy)}`);
    return "reloaded";
  };

  // One read at a time, in call order: a change seen during a read is read again after it.
  let queue: Promise<unknown> = Promise.resolve();
  const reload = (): Promise<ReloadOutcome> => {
    const next = queue.then(reloadOnce, reloadOnce);
    queue = next.catch(() => {});
    return next;
  };

  let stopped = false;
  let settle: Timer | undefined;
  let poll: Timer | undefined;
  const onError = (error: unknown) =>
    log.error(`cannot reload authorization policy "${file}": ${(error as Error).message}`);
  const schedulePoll = () => {
    if (stopped) return;
    poll = clock.setTimeout(() => reload().catch(onError).finally(schedulePoll), options.pollInterval ?? 10_000);
  };
  const stopWatch = (deps.watch ?? watchFolder)(file, () => {
    if (stopped || settle) return;
    settle = clock.setTimeout(() => {
      settle = undefined;
      if (!stopped) reload().catch(onError);
    }, SETTLE_MS);
  });
  schedulePoll();

  return {
    async authorize(attributes) {
      return evaluatePolicy(policy, attributes);
    },
    reload,
    stop() {
      stopped = true;
      settle?.cancel();
      poll?.cancel();
      stopWatch();
    },
  };
}

/** Policies are a few KiB: a larger file is most likely not the policy. */
export const MAX_POLICY_BYTES = 1024 * 1024;

/** The policy file's bytes: a regular file (a FIFO cannot hang the reader) of at most MAX_POLICY_BYTES. */
export async function readPolicyFile(file: string): Promise<Uint8Array> {
  const bytes = await readManifestFile(file, MAX_POLICY_BYTES);
  if (bytes === undefined)
    throw new Error(`larger than ${MAX_POLICY_BYTES} bytes; a policy is a few KiB: is this the policy file?`);
  return bytes;
}

/** fs.watch on the file's folder, so that a file replaced by rename (an atomic save) is still followed. */
function watchFolder(file: string, onChange: () => void): () => void {
  const name = basename(file);
  try {
    const watcher = watch(dirname(file), { persistent: false }, (_event, changed) => {
      if (changed === null || changed.toString() === name) onChange();
    });
    watcher.on("error", () => {});
    return () => watcher.close();
  } catch {
    return () => {}; // the poll still reads the file
  }
}

function digest(bytes: Uint8Array): string {
  return createHash("sha256").update(bytes).digest("hex");
}

function describeReadError(error: unknown): string {
  const code = (error as NodeJS.ErrnoException).code;
  if (code === "ENOENT")
    return 'no such file: write the ClusterRoles and ClusterRoleBindings there (docs/configuration.md, "A local authorization policy")';
  if (code === "EACCES")
    return "permission denied: the kubelet must be able to read it (keep it root-owned, mode 0600)";
  return (error as Error).message;
}
