// The audit hook as the configuration asks for it: the log (--audit_log_path and its rotation flags) and the
// info server's middleware writing to it, or nothing when no path is set.
import type { MiddlewareHandler } from "hono";
import { randomUUID } from "node:crypto";
import { stdout } from "node:process";
import type { Clock } from "../../clock.ts";
import type { KubeletConfig } from "../../config/config-types.ts";
import type { Logger } from "../../log.ts";
import { createAuditLog, type AuditLog } from "./audit-log.ts";
import { createAuditMiddleware } from "./middleware.ts";

/** The audit middleware for the info server, and its log to close at shutdown. */
export interface AuditHook {
  middleware: MiddlewareHandler;
  log: AuditLog;
}

type AuditConfig = Pick<KubeletConfig, "auditLogPath" | "auditLogMaxsize" | "auditLogMaxbackup" | "auditLogMaxage">;

/** The audit hook of `config`; undefined when --audit_log_path is empty. */
export function createAuditHook(
  config: AuditConfig,
  nodeName: string,
  deps: { clock: Pick<Clock, "now">; log?: Logger },
): AuditHook | undefined {
  if (!config.auditLogPath) return undefined;
  const log = createAuditLog(
    {
      path: config.auditLogPath,
      maxSizeMB: config.auditLogMaxsize,
      maxBackups: config.auditLogMaxbackup,
      maxAgeDays: config.auditLogMaxage,
    },
    { clock: deps.clock, stdout, log: deps.log },
  );
  const middleware = createAuditMiddleware({ log, nodeName }, { clock: deps.clock, newId: randomUUID });
  return { middleware: middleware as MiddlewareHandler, log };
}
