// `kubelet logs [-f] [-p] [-c CONTAINER] [--tail N] [--timestamps] [-n NS] POD`: kubectl's logs, as a thin client of
// the API's pods/{name}/log on the local kubelet; a refusal is printed as kubectl prints it. Exit 0, or 1.
import type { StreamClient } from "./stream-client.ts";

export interface LogsOptions {
  pod: string;
  namespace: string;
  container?: string;
  follow: boolean;
  previous: boolean;
  tail?: number;
  timestamps: boolean;
}

/** The request path of `options`. */
export function logsPath(options: LogsOptions): string {
  const query = new URLSearchParams();
  if (options.container) query.set("container", options.container);
  if (options.follow) query.set("follow", "true");
  if (options.previous) query.set("previous", "true");
  if (options.timestamps) query.set("timestamps", "true");
  if (options.tail !== undefined && options.tail >= 0) query.set("tailLines", String(options.tail));
  const search = query.toString();
  return `/api/v1/namespaces/${encodeURIComponent(options.namespace)}/pods/${encodeURIComponent(options.pod)}/log${search ? `?${search}` : ""}`;
}

/** Streams the log to `out`; resolves to the exit code. */
export async function logsCommand(
  client: Pick<StreamClient, "fetch">,
  options: LogsOptions,
  io: { out: NodeJS.WritableStream; err: NodeJS.WritableStream },
): Promise<number> {
  const response = await client.fetch(logsPath(options));
  if (!response.ok) {
    const text = await response.text();
    let status: { reason?: string; message?: string } = {};
    try {
      status = JSON.parse(text) as typeof status;
    } catch {}
    io.err.write(`Error from server (${status.reason ?? response.status}): ${status.message ?? text.trim()}\n`);
    return 1;
  }
  for await (const chunk of response.body ?? []) io.out.write(chunk);
  return 0;
}
