import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Hono } from "hono";
import { DEFAULT_CONFIG } from "../../config/config-types.ts";
import { FakeClock } from "../../testing/fake-clock.ts";
import { createAuditHook } from "./audit.ts";

const dir = mkdtempSync(join(tmpdir(), "kubelet-audit-hook-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

test("no --audit_log_path, no audit hook", () => {
  expect(createAuditHook(DEFAULT_CONFIG, "node-1", { clock: new FakeClock() })).toBeUndefined();
});

test("the hook's middleware writes the configured file, one Event per audited request", async () => {
  const path = join(dir, "audit.log");
  const hook = createAuditHook({ ...DEFAULT_CONFIG, auditLogPath: path }, "node-1", { clock: new FakeClock() })!;
  const app = new Hono();
  app.use("*", hook.middleware);
  app.get("/logs/*", (c) => c.text("boot ok\n"));
  await app.request("/logs/syslog");
  await hook.log.close();
  const event = JSON.parse(readFileSync(path, "utf8"));
  expect(event).toMatchObject({ kind: "Event", apiVersion: "audit.k8s.io/v1", stage: "ResponseComplete" });
  expect(event.objectRef).toEqual({ resource: "nodes", name: "node-1", apiVersion: "v1", subresource: "log" });
  expect(event.auditID).toMatch(/^[0-9a-f-]{36}$/);
});
