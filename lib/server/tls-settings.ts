// tlsCipherSuites, tlsMinVersion and tlsCurvePreferences, named as Go's crypto/tls names them, turned
// into the OpenSSL/BoringSSL strings node:tls and Bun.serve take; an unknown or insecure name is one
// error naming the setting and the fix (upstream's wording where it has one).
import { createSecureContext } from "node:tls";
import { KubeletError } from "../api/types.ts";
import type { KubeletConfig } from "../config/config-types.ts";
import { runtimeName } from "../platform/runtime.ts";

/** What the servers are given: OpenSSL names, and the notes start-up logs. */
export interface TlsSettings {
  /** TLS 1.2 suites, OpenSSL names joined by ":" (undefined: the runtime's defaults). */
  ciphers?: string;
  minVersion: "TLSv1.2" | "TLSv1.3";
  /** Key exchange groups, OpenSSL names joined by ":" (undefined: the runtime's defaults). */
  ecdhCurve?: string;
  notes: string[];
}

/** Go's tls.CipherSuites() for TLS 1.0–1.2 with forward secrecy → OpenSSL names (legacy CHACHA20 names kept, as upstream). */
const SECURE: Record<string, string> = {
  TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA: "ECDHE-ECDSA-AES128-SHA",
  TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA: "ECDHE-ECDSA-AES256-SHA",
  TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA: "ECDHE-RSA-AES128-SHA",
  TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA: "ECDHE-RSA-AES256-SHA",
  TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256: "ECDHE-ECDSA-AES128-GCM-SHA256",
  TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384: "ECDHE-ECDSA-AES256-GCM-SHA384",
  TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256: "ECDHE-RSA-AES128-GCM-SHA256",
  TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384: "ECDHE-RSA-AES256-GCM-SHA384",
  TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256: "ECDHE-RSA-CHACHA20-POLY1305",
  TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256: "ECDHE-ECDSA-CHACHA20-POLY1305",
  TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305: "ECDHE-RSA-CHACHA20-POLY1305",
  TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305: "ECDHE-ECDSA-CHACHA20-POLY1305",
};

/** TLS 1.3 suites: Go accepts their names and always enables all three; so does this kubelet. */
const TLS13 = new Set(["TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256"]);

/**
 * Go's tls.InsecureCipherSuites(), and the RSA key exchange suites (no forward secrecy; Go 1.22 dropped them from
 * its defaults): accepted by the Go kubelet with a log line, refused here, with why.
 */
const INSECURE: Record<string, string> = {
  TLS_RSA_WITH_RC4_128_SHA: "RC4",
  TLS_ECDHE_ECDSA_WITH_RC4_128_SHA: "RC4",
  TLS_ECDHE_RSA_WITH_RC4_128_SHA: "RC4",
  TLS_RSA_WITH_3DES_EDE_CBC_SHA: "3DES",
  TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA: "3DES",
  TLS_RSA_WITH_AES_128_CBC_SHA256: "CBC with SHA-256 (Lucky13)",
  TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256: "CBC with SHA-256 (Lucky13)",
  TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256: "CBC with SHA-256 (Lucky13)",
  TLS_RSA_WITH_AES_128_CBC_SHA: "RSA key exchange, no forward secrecy",
  TLS_RSA_WITH_AES_256_CBC_SHA: "RSA key exchange, no forward secrecy",
  TLS_RSA_WITH_AES_128_GCM_SHA256: "RSA key exchange, no forward secrecy",
  TLS_RSA_WITH_AES_256_GCM_SHA384: "RSA key exchange, no forward secrecy",
};

/** Key exchange groups: Go's constant names, IANA names (case-insensitive, as upstream's flag) and CurveIDs. */
const CURVES: Array<{ names: string[]; id: number; openssl: string }> = [
  { names: ["CurveP256", "secp256r1"], id: 23, openssl: "P-256" },
  { names: ["CurveP384", "secp384r1"], id: 24, openssl: "P-384" },
  { names: ["CurveP521", "secp521r1"], id: 25, openssl: "P-521" },
  { names: ["X25519"], id: 29, openssl: "X25519" },
  { names: ["X25519MLKEM768"], id: 4588, openssl: "X25519MLKEM768" },
];

const SUITE_FIX =
  "use Go crypto/tls names with forward secrecy, e.g. TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384, TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256";

const invalid = (setting: string, message: string) =>
  new KubeletError("InvalidConfig", `invalid ${setting}: ${message}`);

/** The servers' TLS settings from the config; throws InvalidConfig naming the setting for a name it cannot honour. */
export function tlsSettings(
  config: Pick<KubeletConfig, "tlsCipherSuites" | "tlsMinVersion" | "tlsCurvePreferences">,
  supports: (ecdhCurve: string) => boolean = runtimeSupports,
): TlsSettings {
  const notes: string[] = [];
  const minVersion = tlsMinVersion(config.tlsMinVersion, notes);
  const suites = "--tls_cipher_suites (tlsCipherSuites)";
  const ciphers: string[] = [];
  for (const name of config.tlsCipherSuites) {
    if (INSECURE[name])
      throw invalid(suites, `cipher suite ${name} is insecure (${INSECURE[name]}): remove it; ${SUITE_FIX}`);
    if (TLS13.has(name)) continue;
    const openssl = SECURE[name];
    if (!openssl) throw invalid(suites, `Cipher suite ${name} not supported or doesn't exist; ${SUITE_FIX}`);
    if (!ciphers.includes(openssl)) ciphers.push(openssl);
  }
  if (config.tlsCipherSuites.length && minVersion === "TLSv1.3")
    notes.push("Warning: TLS 1.3 cipher suites are not configurable, ignoring --tls_cipher_suites (tlsCipherSuites)");
  else if (config.tlsCipherSuites.length && ciphers.length === 0)
    throw invalid(
      suites,
      `only TLS 1.3 suites are listed, which are not configurable (all three are always on): add TLS 1.2 suites or set --tls_min_version VersionTLS13`,
    );
  const curves = config.tlsCurvePreferences.map((name) => {
    const curve = CURVES.find(
      (c) => c.names.some((n) => n.toLowerCase() === name.toLowerCase()) || String(c.id) === name.trim(),
    );
    if (!curve)
      throw invalid(
        "--tls_curve_preferences (tlsCurvePreferences)",
        `curve preference "${name}" not supported or doesn't exist; use ${CURVES.map((c) => `${c.names[0]} (${c.id})`).join(", ")}`,
      );
    return curve.openssl;
  });
  const ecdhCurve = [...new Set(curves)].join(":");
  if (curves.length && !supports(ecdhCurve))
    throw invalid(
      "--tls_curve_preferences (tlsCurvePreferences)",
      `${config.tlsCurvePreferences.join(", ")}: not all supported by the TLS library of ${runtimeName()} (X25519MLKEM768 needs BoringSSL, as in the compiled binary, or OpenSSL 3.5); remove the ones it lacks`,
    );
  return {
    ...(ciphers.length && minVersion === "TLSv1.2" ? { ciphers: ciphers.join(":") } : {}),
    minVersion,
    ...(curves.length ? { ecdhCurve } : {}),
    notes,
  };
}

function tlsMinVersion(name: string, notes: string[]): TlsSettings["minVersion"] {
  if (name === "VersionTLS13") return "TLSv1.3";
  if (name === "" || name === "VersionTLS12") return "TLSv1.2";
  if (name === "VersionTLS10" || name === "VersionTLS11") {
    notes.push(`--tls_min_version (tlsMinVersion) ${name}: the server accepts TLS 1.2 and later only`);
    return "TLSv1.2";
  }
  throw invalid(
    "--tls_min_version (tlsMinVersion)",
    `unknown tls version ${JSON.stringify(name)}; use VersionTLS12 or VersionTLS13`,
  );
}

/** Whether this runtime's TLS library knows every group in `ecdhCurve`. */
function runtimeSupports(ecdhCurve: string): boolean {
  try {
    createSecureContext({ ecdhCurve });
    return true;
  } catch {
    return false;
  }
}
