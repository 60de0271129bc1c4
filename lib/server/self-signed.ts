// The serving certificate the Go kubelet makes when it is given none: with --client_ca_file and no
// --tls_cert_file/--tls_private_key_file, <cert_dir>/kubelet.crt and kubelet.key (cert_dir defaults
// to <root_dir>/pki), self-signed for the node's hostname, written once and reused while readable.
// node:crypto makes keys and signatures but not certificates: the X.509 DER is encoded here.
import { generateKeyPairSync, randomBytes, sign } from "node:crypto";
import { isIP } from "node:net";
import { access, constants, mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { KubeletError } from "../api/types.ts";
import type { KubeletConfig } from "../config/config-types.ts";

/** Where the server's certificate and key are, and whether they were made just now. */
export interface ServingFiles {
  tlsCertFile: string;
  tlsPrivateKeyFile: string;
  generated: boolean;
}

/**
 * The serving files to use: undefined when the config gives them or asks for no TLS (no client CA);
 * else the self-signed pair under the cert directory, generated when it cannot be read.
 */
export async function selfSignedServingFiles(
  config: Pick<KubeletConfig, "clientCaFile" | "tlsCertFile" | "tlsPrivateKeyFile" | "certDir" | "rootDir">,
  hostname: string,
  now = new Date(),
): Promise<ServingFiles | undefined> {
  if (!config.clientCaFile || config.tlsCertFile || config.tlsPrivateKeyFile) return undefined;
  const dir = config.certDir || join(config.rootDir, "pki");
  const files = { tlsCertFile: join(dir, "kubelet.crt"), tlsPrivateKeyFile: join(dir, "kubelet.key") };
  const readable = await Promise.all(
    [files.tlsCertFile, files.tlsPrivateKeyFile].map((path) =>
      access(path, constants.R_OK).then(
        () => true,
        () => false,
      ),
    ),
  );
  if (readable.every(Boolean)) return { ...files, generated: false };
  const { cert, key } = selfSignedCertificate(hostname, now);
  try {
    await mkdir(dir, { recursive: true, mode: 0o755 });
    await writeFile(files.tlsPrivateKeyFile, key, { mode: 0o600 });
    await writeFile(files.tlsCertFile, cert, { mode: 0o644 });
  } catch (error) {
    throw new KubeletError(
      "CertWriteFailed",
      `cannot write the self-signed serving certificate under --cert_dir "${dir}": ${(error as Error).message}; give --tls_cert_file and --tls_private_key_file, or a writable --cert_dir`,
      { cause: error },
    );
  }
  return { ...files, generated: true };
}

/** A self-signed P-256 certificate (PEM) for `host`, valid a year from `now`, as a CA and a TLS server. */
export function selfSignedCertificate(host: string, now: Date): { cert: string; key: string } {
  const { privateKey, publicKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
  const name = seq(set(seq(oid("2.5.4.3"), tlv(0x0c, Buffer.from(`${host}@${Math.floor(now.getTime() / 1000)}`)))));
  const year = new Date(now.getTime() + 365 * 24 * 3600 * 1000);
  const ecdsaWithSha256 = seq(oid("1.2.840.10045.4.3.2"));
  const serial = randomBytes(16);
  serial[0] = (serial[0]! & 0x3f) | 0x40; // positive, and minimal as DER asks
  const altName = isIP(host) ? tlv(0x87, ipBytes(host)) : tlv(0x82, Buffer.from(host));
  const extensions = tlv(
    0xa3,
    seq(
      // basicConstraints (critical): CA, as Go's self-signed pair; keyUsage: digitalSignature, keyEncipherment, keyCertSign
      seq(oid("2.5.29.19"), tlv(0x01, Buffer.from([0xff])), octets(seq(tlv(0x01, Buffer.from([0xff]))))),
      seq(oid("2.5.29.15"), tlv(0x01, Buffer.from([0xff])), octets(tlv(0x03, Buffer.from([0x02, 0xa4])))),
      // extKeyUsage: serverAuth; subjectAltName: the host
      seq(oid("2.5.29.37"), octets(seq(oid("1.3.6.1.5.5.7.3.1")))),
      seq(oid("2.5.29.17"), octets(seq(altName))),
    ),
  );
  const tbs = seq(
    tlv(0xa0, tlv(0x02, Buffer.from([2]))),
    tlv(0x02, serial),
    ecdsaWithSha256,
    name,
    seq(time(now), time(year)),
    name,
    publicKey.export({ type: "spki", format: "der" }),
    extensions,
  );
  const signature = sign("sha256", tbs, privateKey);
  const der = seq(tbs, ecdsaWithSha256, tlv(0x03, Buffer.concat([Buffer.from([0]), signature])));
  return {
    cert: pem("CERTIFICATE", der),
    key: privateKey.export({ type: "pkcs8", format: "pem" }).toString(),
  };
}

function tlv(tag: number, body: Buffer): Buffer {
  const n = body.length;
  const length =
    n < 0x80 ? Buffer.from([n]) : n < 0x100 ? Buffer.from([0x81, n]) : Buffer.from([0x82, n >> 8, n & 0xff]);
  return Buffer.concat([Buffer.from([tag]), length, body]);
}
const seq = (...parts: Buffer[]) => tlv(0x30, Buffer.concat(parts));
const set = (...parts: Buffer[]) => tlv(0x31, Buffer.concat(parts));
const octets = (body: Buffer) => tlv(0x04, body);

function oid(dotted: string): Buffer {
  const [a, b, ...rest] = dotted.split(".").map(Number);
  const bytes = [a! * 40 + b!];
  for (const n of rest) {
    const base128 = [n & 0x7f];
    for (let v = n >> 7; v > 0; v >>= 7) base128.unshift((v & 0x7f) | 0x80);
    bytes.push(...base128);
  }
  return tlv(0x06, Buffer.from(bytes));
}

/** UTCTime (YYMMDDHHMMSSZ) up to 2049, GeneralizedTime after, as RFC 5280 asks. */
function time(date: Date): Buffer {
  const text = date.toISOString().replace(/[-:T]/g, "").slice(0, 14) + "Z";
  return date.getUTCFullYear() < 2050 ? tlv(0x17, Buffer.from(text.slice(2))) : tlv(0x18, Buffer.from(text));
}

function ipBytes(ip: string): Buffer {
  if (isIP(ip) === 4) return Buffer.from(ip.split(".").map(Number));
  const [head, tail = ""] = ip.split("::");
  const groups = (part: string) => (part ? part.split(":") : []);
  const missing = 8 - groups(head!).length - groups(tail).length;
  const all = [...groups(head!), ...Array(ip.includes("::") ? missing : 0).fill("0"), ...groups(tail)];
  return Buffer.from(all.flatMap((g) => [parseInt(g, 16) >> 8, parseInt(g, 16) & 0xff]));
}

function pem(label: string, der: Buffer): string {
  const lines = der.toString("base64").match(/.{1,64}/g) ?? [];
  return `-----BEGIN ${label}-----\n${lines.join("\n")}\n-----END ${label}-----\n`;
}
