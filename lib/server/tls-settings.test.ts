import { describe, expect, test } from "bun:test";
import { createSecureContext } from "node:tls";
import { tlsSettings } from "./tls-settings.ts";

const settings = (over: Partial<Parameters<typeof tlsSettings>[0]>) =>
  tlsSettings({ tlsCipherSuites: [], tlsMinVersion: "", tlsCurvePreferences: [], ...over });

describe("tlsSettings", () => {
  test("nothing configured leaves the runtime's suites and curves, with TLS 1.2 as the floor", () => {
    expect(settings({})).toEqual({ minVersion: "TLSv1.2", notes: [] });
  });

  test("Go suite names become OpenSSL names, in the given order, legacy CHACHA20 names included", () => {
    expect(
      settings({
        tlsCipherSuites: [
          "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
          "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305",
          "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA",
        ],
      }).ciphers,
    ).toBe("ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-AES128-SHA");
  });

  test("an unknown suite is refused with upstream's words, the setting and the fix", () => {
    expect(() => settings({ tlsCipherSuites: ["ECDHE-RSA-AES128-GCM-SHA256"] })).toThrow(
      /invalid --tls_cipher_suites \(tlsCipherSuites\): Cipher suite ECDHE-RSA-AES128-GCM-SHA256 not supported or doesn't exist; use Go crypto\/tls names/,
    );
  });

  test("an insecure suite is refused with why", () => {
    expect(() => settings({ tlsCipherSuites: ["TLS_RSA_WITH_3DES_EDE_CBC_SHA"] })).toThrow(
      /cipher suite TLS_RSA_WITH_3DES_EDE_CBC_SHA is insecure \(3DES\): remove it/,
    );
    expect(() => settings({ tlsCipherSuites: ["TLS_RSA_WITH_AES_128_GCM_SHA256"] })).toThrow(/no forward secrecy/);
  });

  test("TLS 1.3 suites cannot be chosen, as in Go: listed ones are accepted and change nothing", () => {
    expect(
      settings({ tlsCipherSuites: ["TLS_AES_128_GCM_SHA256", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"] }).ciphers,
    ).toBe("ECDHE-RSA-AES128-GCM-SHA256");
    expect(() => settings({ tlsCipherSuites: ["TLS_AES_128_GCM_SHA256"] })).toThrow(/not configurable/);
  });

  test("with TLS 1.3 as the floor the suites are ignored with upstream's warning", () => {
    const tls = settings({ tlsMinVersion: "VersionTLS13", tlsCipherSuites: ["TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"] });
    expect(tls.minVersion).toBe("TLSv1.3");
    expect(tls.ciphers).toBeUndefined();
    expect(tls.notes).toEqual([expect.stringMatching(/TLS 1.3 cipher suites are not configurable, ignoring/)]);
  });

  test("versions below 1.2 keep the 1.2 floor with a note; an unknown version is refused", () => {
    expect(settings({ tlsMinVersion: "VersionTLS10" })).toEqual({
      minVersion: "TLSv1.2",
      notes: [expect.stringMatching(/accepts TLS 1.2 and later only/)],
    });
    expect(() => settings({ tlsMinVersion: "TLS1.3" })).toThrow(
      /invalid --tls_min_version \(tlsMinVersion\): unknown tls version "TLS1.3"; use VersionTLS12 or VersionTLS13/,
    );
  });

  test("curves by Go name, IANA name in any case or CurveID become OpenSSL group names, once each", () => {
    expect(
      settings({ tlsCurvePreferences: ["X25519MLKEM768", "curvep384", "SECP256R1", "29", "CurveP256"] }).ecdhCurve,
    ).toBe("X25519MLKEM768:P-384:P-256:X25519");
  });

  test("a group the runtime's TLS library lacks is refused naming the runtime (node 20's OpenSSL 3.0 lacks ML-KEM)", () => {
    const lacking = (curves: string) => !curves.includes("MLKEM");
    expect(() =>
      tlsSettings({ tlsCipherSuites: [], tlsMinVersion: "", tlsCurvePreferences: ["X25519MLKEM768"] }, lacking),
    ).toThrow(/X25519MLKEM768: not all supported by the TLS library of bun /);
    expect(() =>
      createSecureContext({ ecdhCurve: settings({ tlsCurvePreferences: ["X25519MLKEM768"] }).ecdhCurve }),
    ).not.toThrow();
  });

  test("an unknown curve is refused with upstream's words and the names it takes", () => {
    expect(() => settings({ tlsCurvePreferences: ["P-256"] })).toThrow(
      /invalid --tls_curve_preferences \(tlsCurvePreferences\): curve preference "P-256" not supported or doesn't exist; use CurveP256 \(23\)/,
    );
  });
});
