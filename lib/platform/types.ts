// What a per-runtime server adapter takes and returns. serve.ts and each adapter import these,
// so the adapters never import serve.ts (which imports them lazily).

/** Certificate, key and optional client CA, as PEM text. */
export interface TlsFiles {
  cert: string;
  key: string;
  /** Client CA bundle: a client certificate is requested and verified against it, not required. */
  ca?: string;
}

/** The TLS policy besides the files, in OpenSSL's names (lib/server/tls-settings.ts makes them from Go's). */
export interface TlsPolicy {
  /** TLS 1.2 suites joined by ":" (undefined: the runtime's defaults). */
  ciphers?: string;
  minVersion?: "TLSv1.2" | "TLSv1.3";
  /** Key exchange groups joined by ":" (undefined: the runtime's defaults). */
  ecdhCurve?: string;
}

export interface ServeOptions {
  hostname: string;
  /** 0 picks a free port. */
  port: number;
  tls?: TlsFiles & TlsPolicy;
  /** How long a connection with no request in flight stays open, seconds (0 = forever; default 90, as the kubelet's). */
  idleTimeoutSeconds?: number;
}

export interface RunningServer {
  port: number;
  /** Closes the listener and open connections (log streams included). */
  stop(): Promise<void>;
  /** TLS servers: serves new connections with these files (a renewed certificate); open connections keep theirs. */
  setTls?(files: TlsFiles): Promise<void>;
}

export type FetchHandler = (request: Request) => Response | Promise<Response>;
