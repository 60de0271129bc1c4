// Which requests came over a TLS connection whose client certificate the server's client CA verified.
// The node:https adapter records it per request (Bun.serve exposes no peer certificate); auth reads it.
const verified = new WeakSet<Request>();

/** Records that `request` arrived with a verified client certificate. */
export function markClientCertificate(request: Request): void {
  verified.add(request);
}

/** Whether `request` arrived with a client certificate signed by the client CA. */
export function hasClientCertificate(request: Request): boolean {
  return verified.has(request);
}
