// HTTP and TCP probe failures worded as Go's net and net/http word them, as the Go kubelet's probe
// messages show them (`Get "http://…": dial tcp 127.0.0.1:8080: connect: connection refused`), not as Bun does.

/** host:port as Go's net.JoinHostPort writes it (an IPv6 address in brackets). */
export function joinHostPort(host: string, port: number): string {
  return host.includes(":") ? `[${host}]:${port}` : `${host}:${port}`;
}

/** Go's words after `connect: ` for the errno codes a connect returns. */
const CONNECT: Record<string, string> = {
  ECONNREFUSED: "connection refused",
  EHOSTUNREACH: "no route to host",
  ENETUNREACH: "network is unreachable",
  EADDRNOTAVAIL: "cannot assign requested address",
};

/** Name lookup failures: Node's getaddrinfo codes and Bun's own. */
const LOOKUP: Record<string, string> = {
  ENOTFOUND: "no such host",
  DNS_ENOTFOUND: "no such host",
  EAI_NONAME: "no such host",
  EAI_AGAIN: "Temporary failure in name resolution",
};

/** Go's net.Dial error for a connection to host:port that failed with `error`; undefined for a code not known here. */
export function dialError(error: unknown, host: string, port: number): string | undefined {
  const code = String((error as { code?: unknown } | null)?.code ?? "");
  if (CONNECT[code]) return `dial tcp ${joinHostPort(host, port)}: connect: ${CONNECT[code]}`;
  if (LOOKUP[code]) return `dial tcp: lookup ${host}: ${LOOKUP[code]}`;
  if (code === "ETIMEDOUT") return `dial tcp ${joinHostPort(host, port)}: i/o timeout`;
  return undefined;
}

/** The HTTP probe's failure as Go's http.Client reports a failed GET: `Get "<url>": …`. */
export function httpGetError(error: unknown, url: string, host: string, port: number): string {
  const e = error as { name?: unknown; code?: unknown; message?: unknown };
  const why =
    e?.name === "TimeoutError"
      ? "context deadline exceeded (Client.Timeout exceeded while awaiting headers)"
      : e?.code === "ECONNRESET"
        ? "EOF" // the server closed the connection before a response, as Go's transport says it
        : (dialError(error, host, port) ?? String(e?.message ?? error));
  return `Get "${url}": ${why}`;
}

/** The TCP probe's failure as Go's net.DialTimeout reports it. */
export function tcpDialError(error: unknown, host: string, port: number): string {
  return dialError(error, host, port) ?? `dial tcp ${joinHostPort(host, port)}: ${(error as Error).message}`;
}
