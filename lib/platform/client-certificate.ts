// Which requests came over a TLS connection whose client certificate the server's client CA verified, and that
// certificate's subject (CN and O: the caller's user and groups). The node:http(s) adapter records it per request
// (Bun.serve exposes no peer certificate); auth reads it.

/** A verified client certificate's subject, as node:tls's getPeerCertificate() gives it (O: one or several). */
export interface ClientCertificateSubject {
  CN?: string | string[];
  O?: string | string[];
}

const verified = new WeakMap<Request, ClientCertificateSubject>();

/**
 * The subject of a TLS socket's peer certificate: node:tls's getPeerCertificate(). Bun's node:https server socket has
 * none (so Bun serves through node:tls, tls-http.ts): a socket without it gives `{}`, which names nobody.
 */
export function peerSubject(socket: {
  getPeerCertificate?(): { subject?: ClientCertificateSubject };
}): ClientCertificateSubject {
  return typeof socket.getPeerCertificate === "function" ? (socket.getPeerCertificate()?.subject ?? {}) : {};
}

/** Records that `request` arrived with a verified client certificate whose subject is `subject`. */
export function markClientCertificate(request: Request, subject: ClientCertificateSubject = {}): void {
  verified.set(request, subject);
}

/** Whether `request` arrived with a client certificate signed by the client CA. */
export function hasClientCertificate(request: Request): boolean {
  return verified.has(request);
}

/** The subject of `request`'s verified client certificate, if it had one. */
export function clientCertificateSubject(request: Request): ClientCertificateSubject | undefined {
  return verified.get(request);
}
