// The peer address of each request, recorded by the server adapters (a fetch Request carries none) for
// the audit log's sourceIPs.
const addresses = new WeakMap<Request, string>();

/** Records the address `request` came from (an IPv4-mapped IPv6 address as its IPv4 form, as Go prints it). */
export function markRemoteAddress(request: Request, address: string | undefined): void {
  if (address) addresses.set(request, address.replace(/^::ffff:(\d+\.\d+\.\d+\.\d+)$/, "$1"));
}

/** The address `request` came from, when its adapter recorded one. */
export function remoteAddress(request: Request): string | undefined {
  return addresses.get(request);
}
