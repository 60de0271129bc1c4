import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, renameSync, rmSync, unlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Logger } from "../../log.ts";
import { FakeClock } from "../../testing/fake-clock.ts";
import { nodeRequest } from "../../testing/node-request.ts";
import { createRbacAuthorizer, type RbacAuthorizer } from "./rbac-authorizer.ts";

const dir = mkdtempSync(join(tmpdir(), "kubelet-rbac-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A policy granting `user` get on nodes/<subresource>. */
const grant = (user: string, subresource: string) => `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: r}
rules: [{apiGroups: [""], resources: [nodes/${subresource}], verbs: [get]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: b}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: r}
subjects: [{kind: User, name: ${user}}]
`;
const BROKEN = grant("prometheus", "stats").replace("verbs: [get]", "verbs: []");

const decision = async (authorizer: RbacAuthorizer, user: string, subresource: string) =>
  (await authorizer.authorize(nodeRequest(user, "get", subresource))).decision;

function recordingLog() {
  const lines: Array<{ level: string; message: string }> = [];
  const at = (level: string) => (message: string) => lines.push({ level, message });
  const log: Logger = { debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error"), child: () => log };
  return { log, lines };
}

let count = 0;
const policyFile = (text: string) => {
  const file = join(dir, `policy-${count++}.yaml`);
  writeFileSync(file, text);
  return file;
};
/** Why a promise rejected (a test failure when it resolved). */
const rejection = (promise: Promise<unknown>) =>
  promise.then(
    () => Promise.reject(new Error("expected a rejection")),
    (error: Error & { code?: string }) => error,
  );
/** No watch and no poll: the test calls reload() itself. */
const manual = { watch: () => () => {}, clock: new FakeClock() };

describe("start", () => {
  test("answers with the file's roles: allow for what it grants, no opinion for the rest", async () => {
    const authorizer = await createRbacAuthorizer({ file: policyFile(grant("prometheus", "metrics")) }, manual);
    expect(await decision(authorizer, "prometheus", "metrics")).toBe("allow");
    expect(await decision(authorizer, "prometheus", "proxy")).toBe("no-opinion");
    expect(await decision(authorizer, "grafana", "metrics")).toBe("no-opinion");
    authorizer.stop();
  });

  test("refuses a missing file with code InvalidConfig, naming the flag, the file and what to write", async () => {
    const file = join(dir, "absent.yaml");
    const error = await rejection(createRbacAuthorizer({ file }, manual));
    expect(error.code).toBe("InvalidConfig");
    expect(error.message).toBe(
      `cannot read --authorization_policy_file "${file}" (authorization.mode RBAC): no such file: write the ClusterRoles and ClusterRoleBindings there (docs/configuration.md, "A local authorization policy")`,
    );
  });

  test("refuses to start without a file, naming the setting", async () => {
    const error = await rejection(createRbacAuthorizer({ file: "" }, manual));
    expect(error.code).toBe("InvalidConfig");
    expect(error.message).toStartWith(
      "authorization.mode RBAC needs its policy file: give --authorization_policy_file (authorization.policyFile)",
    );
  });

  test("refuses a file with errors, naming each one with its document, object and field path", async () => {
    const file = policyFile(BROKEN);
    const error = await rejection(createRbacAuthorizer({ file }, manual));
    expect(error.code).toBe("InvalidConfig");
    expect(error.message).toBe(
      `cannot load --authorization_policy_file "${file}": ${file}[0] ClusterRole r: rules[0].verbs: Required value: verbs must contain at least one value`,
    );
  });

  test("logs each warning of a file that loads", async () => {
    const { log, lines } = recordingLog();
    const file = policyFile(grant("prometheus", "metric"));
    (await createRbacAuthorizer({ file, log }, manual)).stop();
    expect(lines.filter((l) => l.level === "warn").map((l) => l.message)[0]).toContain(
      `${file}[0] ClusterRole r: rules[0].resources[0]: Invalid value: "nodes/metric": the kubelet checks no such resource (did you mean nodes/metrics?)`,
    );
    expect(lines.at(-1)).toEqual({
      level: "info",
      message: `authorization policy "${file}" loaded: 1 ClusterRole, 1 ClusterRoleBinding`,
    });
  });
});

describe("reload", () => {
  test("follows a file replaced atomically (a new file renamed over it)", async () => {
    const file = policyFile(grant("prometheus", "metrics"));
    const authorizer = await createRbacAuthorizer({ file }, manual);
    writeFileSync(`${file}.tmp`, grant("grafana", "metrics"));
    renameSync(`${file}.tmp`, file);
    expect(await authorizer.reload()).toBe("reloaded");
    expect(await decision(authorizer, "grafana", "metrics")).toBe("allow");
    expect(await decision(authorizer, "prometheus", "metrics")).toBe("no-opinion");
  });

  test("follows a file rewritten in place", async () => {
    const file = policyFile(grant("prometheus", "metrics"));
    const authorizer = await createRbacAuthorizer({ file }, manual);
    expect(await authorizer.reload()).toBe("unchanged");
    writeFileSync(file, grant("prometheus", "stats"));
    expect(await authorizer.reload()).toBe("reloaded");
    expect(await decision(authorizer, "prometheus", "stats")).toBe("allow");
    expect(await decision(authorizer, "prometheus", "metrics")).toBe("no-opinion");
  });

  test("a broken edit keeps the last good policy and logs the file, field path and fix once", async () => {
    const { log, lines } = recordingLog();
    const clock = new FakeClock(Date.UTC(2026, 10, 28, 12));
    const file = policyFile(grant("prometheus", "metrics"));
    const authorizer = await createRbacAuthorizer({ file, log }, { ...manual, clock });
    writeFileSync(file, BROKEN);
    expect(await authorizer.reload()).toBe("kept");
    expect(await decision(authorizer, "prometheus", "metrics")).toBe("allow");
    const errors = () => lines.filter((l) => l.level === "error").map((l) => l.message);
    expect(errors()).toEqual([
      `cannot reload authorization policy "${file}", keeping the policy loaded at 2026-11-28T12:00:00.000Z: ${file}[0] ClusterRole r: rules[0].verbs: Required value: verbs must contain at least one value`,
    ]);
    expect(await authorizer.reload()).toBe("unchanged");
    expect(errors().length).toBe(1);
    writeFileSync(file, grant("prometheus", "stats"));
    expect(await authorizer.reload()).toBe("reloaded");
    expect(await decision(authorizer, "prometheus", "stats")).toBe("allow");
  });

  test("a deleted file keeps the last good policy and says so once", async () => {
    const { log, lines } = recordingLog();
    const file = policyFile(grant("prometheus", "metrics"));
    const authorizer = await createRbacAuthorizer({ file, log }, manual);
    unlinkSync(file);
    expect(await authorizer.reload()).toBe("kept");
    expect(await authorizer.reload()).toBe("kept");
    expect(await decision(authorizer, "prometheus", "metrics")).toBe("allow");
    expect(lines.filter((l) => l.level === "warn").map((l) => l.message)).toEqual([
      `cannot read authorization policy "${file}": no such file: write the ClusterRoles and ClusterRoleBindings there (docs/configuration.md, "A local authorization policy"); keeping the policy loaded at 2026-01-01T00:00:00.000Z`,
    ]);
  });
});

describe("what triggers a reload", () => {
  /** An in-memory file, read by the authorizer, that counts its reads. */
  const memoryFile = (text: string) => {
    const state = { text, reads: 0 };
    const readFile = async () => {
      state.reads++;
      return new TextEncoder().encode(state.text);
    };
    return { state, readFile };
  };

  test("the poll reads the file again every pollInterval", async () => {
    const clock = new FakeClock();
    const { state, readFile } = memoryFile(grant("prometheus", "metrics"));
    const authorizer = await createRbacAuthorizer(
      { file: "/etc/kubelet/policy.yaml", pollInterval: 5_000 },
      { clock, readFile, watch: () => () => {} },
    );
    state.text = grant("grafana", "metrics");
    await clock.advance(4_999);
    expect(state.reads).toBe(1);
    await clock.advance(1);
    expect(await decision(authorizer, "grafana", "metrics")).toBe("allow");
    await clock.advance(5_000);
    expect(state.reads).toBe(3);
    authorizer.stop();
  });

  test("a burst of watch events is one read, once the save has settled", async () => {
    const clock = new FakeClock();
    const { state, readFile } = memoryFile(grant("prometheus", "metrics"));
    let changed = () => {};
    const authorizer = await createRbacAuthorizer(
      { file: "/etc/kubelet/policy.yaml" },
      {
        clock,
        readFile,
        watch: (_file, onChange) => {
          changed = onChange;
          return () => {};
        },
      },
    );
    state.text = grant("grafana", "metrics");
    changed();
    changed();
    changed();
    await clock.advance(99);
    expect(state.reads).toBe(1);
    await clock.advance(1);
    expect(state.reads).toBe(2);
    expect(await decision(authorizer, "grafana", "metrics")).toBe("allow");
    authorizer.stop();
  });

  test("stop ends the poll and the watch", async () => {
    const clock = new FakeClock();
    let watching = true;
    const { readFile } = memoryFile(grant("prometheus", "metrics"));
    const authorizer = await createRbacAuthorizer(
      { file: "/etc/kubelet/policy.yaml" },
      { clock, readFile, watch: () => () => (watching = false) },
    );
    expect(clock.pendingTimers).toBe(1);
    authorizer.stop();
    expect(clock.pendingTimers).toBe(0);
    expect(watching).toBe(false);
  });

  test("a poll still reading when stop is called schedules no other", async () => {
    const clock = new FakeClock();
    const { readFile } = memoryFile(grant("prometheus", "metrics"));
    let release = () => {};
    let reads = 0;
    const authorizer = await createRbacAuthorizer(
      { file: "/etc/kubelet/policy.yaml", pollInterval: 5_000 },
      {
        clock,
        watch: () => () => {},
        readFile: async () => {
          if (reads++ === 1) await new Promise<void>((resolve) => (release = resolve));
          return readFile();
        },
      },
    );
    await clock.advance(5_000);
    expect(reads).toBe(2);
    authorizer.stop();
    release();
    await authorizer.reload();
    expect(clock.pendingTimers).toBe(0);
  });

  test("the default watch sees a file renamed over the policy in its folder", async () => {
    const folder = mkdtempSync(join(dir, "watched-"));
    const file = join(folder, "policy.yaml");
    writeFileSync(file, grant("prometheus", "metrics"));
    const authorizer = await createRbacAuthorizer({ file, pollInterval: 3_600_000 });
    writeFileSync(join(folder, "next.yaml"), grant("grafana", "metrics"));
    renameSync(join(folder, "next.yaml"), file);
    const deadline = Date.now() + 10_000;
    while ((await decision(authorizer, "grafana", "metrics")) !== "allow" && Date.now() < deadline)
      await new Promise((resolve) => setTimeout(resolve, 20));
    expect(await decision(authorizer, "grafana", "metrics")).toBe("allow");
    authorizer.stop();
  });
});
