// The etcd client's TLS files: the CA, client certificate and key read now and again every few seconds, so
// a rotation on disk (cert-manager, a cron) reaches the next connection without a restart; and the check of
// the server's certificate against the endpoint, with a message naming both.
import { X509Certificate, createPrivateKey } from "node:crypto";
import { readFileSync } from "node:fs";
import { isIP } from "node:net";
import { checkServerIdentity, type PeerCertificate } from "node:tls";
import { KubeletError } from "../api/types.ts";

/** PEM files: the CA to trust, and a client certificate and key to present (both or neither). */
export interface EtcdTlsFiles {
  caFile: string;
  certFile?: string;
  keyFile?: string;
}

type CaUpdate = { caCertificate: Buffer } | null;
type IdentityUpdate = { certificate: Buffer; privateKey: Buffer } | null;

/** gRPC's CertificateProvider, as its certificate-provider channel credentials call it. */
export interface CertificateProvider {
  addCaCertificateListener(listener: (update: CaUpdate) => void): void;
  removeCaCertificateListener(listener: (update: CaUpdate) => void): void;
  addIdentityCertificateListener(listener: (update: IdentityUpdate) => void): void;
  removeIdentityCertificateListener(listener: (update: IdentityUpdate) => void): void;
}

/**
 * Reads the files now and every `reloadMs` (on a timer that never keeps the process alive), telling gRPC of
 * each change. A file that cannot be read or parsed, or a certificate that does not match its key (half of a
 * rotation written), keeps what was read before. `identity` is the provider when a client certificate is set.
 */
export function watchCertificateFiles(
  tls: EtcdTlsFiles,
  reloadMs: number,
): {
  provider: CertificateProvider;
  identity: CertificateProvider | null;
  /** One read of the files (what the timer runs). */
  reload(): void;
  stop(): void;
} {
  let ca: CaUpdate = null;
  let identity: IdentityUpdate = null;
  const caListeners = new Set<(update: CaUpdate) => void>();
  const identityListeners = new Set<(update: IdentityUpdate) => void>();
  const attempt = (read: () => void) => {
    try {
      read();
    } catch {
      // Kept: the previous files' contents (the next read may find the rotation complete).
    }
  };
  const read = () => {
    attempt(() => {
      const pem = readFileSync(tls.caFile);
      new X509Certificate(pem);
      if (ca?.caCertificate.equals(pem)) return;
      ca = { caCertificate: pem };
      for (const listener of caListeners) listener(ca);
    });
    const { certFile, keyFile } = tls;
    if (certFile && keyFile)
      attempt(() => {
        const certificate = readFileSync(certFile);
        const privateKey = readFileSync(keyFile);
        if (!new X509Certificate(certificate).checkPrivateKey(createPrivateKey(privateKey))) return;
        if (identity?.certificate.equals(certificate) && identity.privateKey.equals(privateKey)) return;
        identity = { certificate, privateKey };
        for (const listener of identityListeners) listener(identity);
      });
  };
  read();
  const timer = setInterval(read, reloadMs);
  timer.unref?.();
  const provider: CertificateProvider = {
    addCaCertificateListener(listener) {
      caListeners.add(listener);
      listener(ca);
    },
    removeCaCertificateListener: (listener) => caListeners.delete(listener),
    addIdentityCertificateListener(listener) {
      identityListeners.add(listener);
      listener(identity);
    },
    removeIdentityCertificateListener: (listener) => identityListeners.delete(listener),
  };
  return {
    provider,
    identity: tls.certFile && tls.keyFile ? provider : null,
    reload: read,
    stop: () => clearInterval(timer),
  };
}

/**
 * Node's check (the IP SANs for an IP, the DNS SANs for a name), with a message naming the endpoint and what
 * the certificate is for.
 */
export function certificateMismatch(host: string, cert: PeerCertificate, endpoints: string[]): Error | undefined {
  if (!checkServerIdentity(host, cert)) return undefined;
  const dialled = endpoints.filter((e) => URL.canParse(e) && new URL(e).hostname.replace(/^\[|\]$/g, "") === host);
  const names = cert.subjectaltname ? cert.subjectaltname : `CN=${cert.subject?.CN ?? "?"} and no subjectAltName`;
  return new KubeletError(
    "CertificateMismatch",
    `etcd endpoint ${dialled.join(", ") || host} presents a certificate for ${names}, not for ${host}: ` +
      `address etcd by a name or IP its certificate lists, or give it a certificate with ${isIP(host) ? "IP" : "DNS"}:${host} in its subjectAltName`,
  );
}
