// The listeners the kubelet will open (--port, --read_only_port, --healthz_port), checked before anything
// else starts: an address in use or refused is one line naming the flag and the fix, and the kubelet stops
// there, as the Go kubelet exits when a server cannot listen.
import { createServer } from "node:net";
import { KubeletError } from "../api/types.ts";
import type { KubeletConfig } from "../config/config-types.ts";

/** One listener: the flag that sets its port, and where it binds. */
export interface Listener {
  flag: string;
  /** The flag that sets its address. */
  hostFlag: string;
  host: string;
  port: number;
}

/** The listeners `config` asks for (a port of 0 is none, except --port's, which takes any free port). */
export function configuredListeners(config: KubeletConfig): Listener[] {
  const listeners: Listener[] = [];
  if (config.enableServer)
    listeners.push({ flag: "--port", hostFlag: "--address", host: config.address, port: config.port });
  if (config.enableServer && config.readOnlyPort > 0)
    listeners.push({
      flag: "--read_only_port",
      hostFlag: "--address",
      host: config.address,
      port: config.readOnlyPort,
    });
  if (config.healthzPort > 0)
    listeners.push({
      flag: "--healthz_port",
      hostFlag: "--healthz_bind_address",
      host: config.healthzBindAddress,
      port: config.healthzPort,
    });
  return listeners;
}

/** Binds and releases each listener's address; throws ListenerUnavailable for the first that cannot bind. */
export async function checkListeners(listeners: Listener[]): Promise<void> {
  for (const listener of listeners) {
    await new Promise<void>((resolve, reject) => {
      const server = createServer();
      server.once("error", (error) => reject(listenerError(listener, error)));
      server.listen({ host: listener.host, port: listener.port, exclusive: true }, () => server.close(() => resolve()));
    });
  }
}

/** The server `serving` starts, or the one line naming the listener's flag when it cannot bind. */
export function bound<T>(listener: Listener, serving: Promise<T>): Promise<T> {
  return serving.catch((error: unknown) => {
    throw listenerError(listener, error);
  });
}

/** The one line for a listener that cannot bind: the address, the flag, why, and the fix. */
function listenerError(listener: Listener, error: unknown): KubeletError {
  const code = (error as NodeJS.ErrnoException).code;
  const where = `${listener.host}:${listener.port}`;
  const why =
    code === "EADDRINUSE"
      ? `the address is in use: stop what listens there (ss -ltnp 'sport = :${listener.port}') or give ${listener.flag} another port`
      : code === "EACCES"
        ? `permission denied: ports below 1024 need root (or CAP_NET_BIND_SERVICE); give ${listener.flag} a port above 1023`
        : code === "EADDRNOTAVAIL"
          ? `no interface has that address: give ${listener.hostFlag} a local address (or 0.0.0.0)`
          : `${(error as Error).message}: give ${listener.flag} another port`;
  return new KubeletError("ListenerUnavailable", `cannot listen on ${where} (${listener.flag}): ${why}`, {
    cause: error,
  });
}
