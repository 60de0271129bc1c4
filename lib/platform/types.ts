// What a per-runtime server adapter takes and returns. serve.ts and each adapter import these,
// so the adapters never import serve.ts (which imports them lazily).

/** Certificate, key and optional client CA, as PEM text. */
export interface TlsFiles {
  cert: string;
  key: string;
  /** Client CA bundle: clients must present a certificate it signed. */
  ca?: string;
}

export interface ServeOptions {
  hostname: string;
  /** 0 picks a free port. */
  port: number;
  tls?: TlsFiles;
}

export interface RunningServer {
  port: number;
  /** Closes the listener and open connections (log streams included). */
  stop(): Promise<void>;
}

export type FetchHandler = (request: Request) => Response | Promise<Response>;
