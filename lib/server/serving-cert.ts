// The serving certificate and key as files on disk: re-read when they change (cert-manager, ACME
// renewals) and handed to the servers without a restart; a certificate that has expired or expires
// within 30 days is logged once a day and reported for /healthz?verbose.
import { X509Certificate, createPrivateKey } from "node:crypto";
import { readFile } from "node:fs/promises";
import { every, type Clock } from "../clock.ts";
import type { Logger } from "../log.ts";
import type { TlsFiles } from "../platform/types.ts";

const DAY_MS = 24 * 3600 * 1000;
/** A certificate this close to its end is reported, as renewal should have happened by then. */
export const EXPIRY_WARNING_MS = 30 * DAY_MS;

export interface ServingCertificateOptions {
  certFile: string;
  keyFile: string;
  /** How often the files are read again (default 5 s): a renewal may swap a symlinked directory, which watches miss. */
  intervalMs?: number;
  log: Logger;
  /** Called with the new pair once it is complete and matching (a half-written renewal waits for the next read). */
  onChange(files: Pick<TlsFiles, "cert" | "key">): Promise<void> | void;
}

export interface ServingCertificate {
  /** What /healthz?verbose shows: the certificate's expiry when it is past or within 30 days; else nothing. */
  warnings(): string[];
  /** Reads the files once: hands a new valid pair on, and logs the expiry warning when a day has passed since the last. */
  checkOnce(): Promise<void>;
  /** Checks every interval until `signal` aborts. */
  run(signal: AbortSignal): Promise<void>;
}

/** Watches the serving files starting from the pair the servers were started with (`current`). */
export function createServingCertificate(
  options: ServingCertificateOptions,
  current: Pick<TlsFiles, "cert" | "key">,
  deps: { clock: Clock; read?: (path: string) => Promise<string> },
): ServingCertificate {
  const read = deps.read ?? ((path: string) => readFile(path, "utf8"));
  let served = current;
  let notAfter = expiryOf(current.cert);
  let warnedAt: number | undefined;
  let refused = "";

  const warning = (): string | undefined => {
    if (notAfter === undefined) return undefined;
    const left = notAfter - deps.clock.now();
    const when = new Date(notAfter).toISOString();
    if (left <= 0)
      return `serving certificate ${options.certFile} expired at ${when}: renew it (it is re-read without a restart)`;
    if (left <= EXPIRY_WARNING_MS)
      return `serving certificate ${options.certFile} expires at ${when}, in ${Math.ceil(left / DAY_MS)} day(s): renew it (it is re-read without a restart)`;
    return undefined;
  };

  const checkOnce = async () => {
    const [cert, key] = await Promise.all([read(options.certFile), read(options.keyFile)]);
    if (cert !== served.cert || key !== served.key) {
      const problem = pairProblem(cert, key);
      if (problem) {
        // Logged once per content: a renewal caught between its two writes is fixed by the next read.
        if (refused !== cert + key)
          options.log.warn(`not serving the changed ${options.certFile}: ${problem}; still serving the previous pair`);
        refused = cert + key;
      } else {
        await options.onChange({ cert, key });
        served = { cert, key };
        notAfter = expiryOf(cert);
        warnedAt = undefined;
        options.log.info(
          `serving the renewed certificate ${options.certFile} (valid until ${new Date(notAfter!).toISOString()})`,
        );
      }
    }
    const message = warning();
    if (message && (warnedAt === undefined || deps.clock.now() - warnedAt >= DAY_MS)) {
      options.log.warn(message);
      warnedAt = deps.clock.now();
    }
  };

  return {
    warnings: () => [warning()].filter((w): w is string => w !== undefined),
    checkOnce,
    run: (signal) =>
      every(deps.clock, options.intervalMs ?? 5000, signal, checkOnce, (error) =>
        options.log.warn(
          `cannot read the serving certificate or key: ${error.message}; still serving the previous pair`,
        ),
      ),
  };
}

/** The certificate's notAfter (ms), or undefined when it does not parse. */
function expiryOf(cert: string): number | undefined {
  try {
    return Date.parse(new X509Certificate(cert).validTo);
  } catch {
    return undefined;
  }
}

/** Why `cert` and `key` cannot be served together, or undefined. */
function pairProblem(cert: string, key: string): string | undefined {
  try {
    const certificate = new X509Certificate(cert);
    return certificate.checkPrivateKey(createPrivateKey(key)) ? undefined : "the key does not match the certificate";
  } catch (error) {
    return `it does not parse (${(error as Error).message})`;
  }
}
