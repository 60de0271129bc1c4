// Why a container runtime's socket did not answer, in one clause naming the fix: no socket (not running,
// or the wrong path), permission denied (root or the docker group), refused; with the flag that names it.

/** Which runtime: the flag naming its socket and the command that starts it. */
export interface RuntimeEndpointFlag {
  flag: "--docker_endpoint" | "--container_runtime_endpoint";
  service: "docker" | "containerd";
}

/** The fix for a connection error's text (`connect EACCES /var/run/docker.sock`), or undefined when none applies. */
export function unreachableFix(detail: string, { flag, service }: RuntimeEndpointFlag): string | undefined {
  if (/\bE(ACCES|PERM)\b|permission denied/i.test(detail))
    return `permission denied: run the kubelet as root${service === "docker" ? " or as a member of the docker group" : ""}, or give ${flag} a socket this user may open`;
  if (/\bENOENT\b|no such file/i.test(detail))
    return `no socket there: start ${service} (systemctl start ${service}) or give ${flag} the socket it listens on`;
  if (/\bECONNREFUSED\b|connection refused/i.test(detail))
    return `nothing accepts connections there: start ${service} (systemctl start ${service}) or give ${flag} the address it listens on`;
  return undefined;
}

/** grpc-js's "No connection established. Last error: Error: connect ENOENT /x. Resolution note: " → "connect ENOENT /x". */
export function grpcConnectionCause(detail: string): string {
  return detail
    .replace(/^No connection established\. Last error: (Error: )?/, "")
    .replace(/\.?\s*Resolution note:\s*$/, "")
    .trim();
}
