// Throwaway certificate authorities for TLS tests, made with the openssl command: a CA, then server and
// client certificates it signs (P-256 keys, IP and DNS SANs, a day's validity), as PEM files in a directory.
import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";

/** A certificate and its key, as files. */
export interface CertificateFiles {
  certFile: string;
  keyFile: string;
}

export interface TestCa {
  /** The CA's certificate: what a peer trusts. */
  caFile: string;
  /** A certificate for a server (and, with the same key usage, a peer) with these subjectAltNames. */
  server(name: string, altNames: { ips?: string[]; dns?: string[] }): CertificateFiles;
  /** A client certificate whose CN is `commonName` (etcd's user name under client-certificate auth), O each of `groups`. */
  client(commonName: string, groups?: string[]): CertificateFiles;
}

function openssl(args: string[]): void {
  const result = spawnSync("openssl", args, { encoding: "utf8" });
  if (result.status !== 0) throw new Error(`openssl ${args[0]} failed: ${result.stderr}`);
}

const KEY = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"];

/** Creates a CA named `name` whose files live in `dir`. */
export function createTestCa(dir: string, name: string): TestCa {
  const caFile = join(dir, `${name}.crt`);
  const caKey = join(dir, `${name}.key`);
  openssl(["req", "-x509", ...KEY, "-keyout", caKey, "-out", caFile, "-days", "1", "-subj", `/CN=${name}`]);
  const issue = (file: string, commonName: string, extensions: string, groups: string[] = []): CertificateFiles => {
    const base = join(dir, `${name}-${file}`);
    writeFileSync(`${base}.ext`, `[v3]\n${extensions}\n`);
    openssl([
      "req",
      ...KEY,
      "-keyout",
      `${base}.key`,
      "-out",
      `${base}.csr`,
      "-subj",
      `/CN=${commonName}${groups.map((g) => `/O=${g}`).join("")}`,
    ]);
    openssl([
      "x509",
      "-req",
      "-in",
      `${base}.csr`,
      "-CA",
      caFile,
      "-CAkey",
      caKey,
      "-CAcreateserial",
      "-out",
      `${base}.crt`,
      "-days",
      "1",
      "-extfile",
      `${base}.ext`,
      "-extensions",
      "v3",
    ]);
    return { certFile: `${base}.crt`, keyFile: `${base}.key` };
  };
  return {
    caFile,
    server(file, { ips = [], dns = [] }) {
      const sans = [...ips.map((ip) => `IP:${ip}`), ...dns.map((d) => `DNS:${d}`)].join(",");
      return issue(file, file, `subjectAltName=${sans}\nextendedKeyUsage=serverAuth,clientAuth`);
    },
    client: (commonName, groups) => issue(`client-${commonName}`, commonName, "extendedKeyUsage=clientAuth", groups),
  };
}
