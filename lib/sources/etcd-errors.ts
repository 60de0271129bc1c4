// What etcd's and gRPC's errors mean to an operator: a denied key, a refused login or client certificate,
// an unreachable cluster, each as a KubeletError naming the action, the keys, the endpoints and the user.
import { KubeletError } from "../api/types.ts";
import type { EtcdClientOptions } from "./etcd-client.ts";

/** etcd's answer to a token it no longer has (it forgets them when it restarts). */
export function staleToken(error: Error): boolean {
  return /invalid auth token/.test(error.message);
}

/** `a, b and 3 more keys`: the keys of a refused write, for the message. */
export function keyList(keys: string[]): string {
  return keys.length <= 3 ? keys.join(", ") : `${keys.slice(0, 3).join(", ")} and ${keys.length - 3} more keys`;
}

/** Turns etcd's refusals (permission, password) into KubeletErrors naming the action and the user. */
export function etcdRefusal(options: EtcdClientOptions) {
  return (action: string) =>
    (error: Error): never => {
      throw explain(error, action, options);
    };
}

/** etcd's or gRPC's error for `action`, as a KubeletError saying who was refused and why, when it is one of those. */
export function explain(error: Error, action: string, options: EtcdClientOptions): Error {
  const user = options.auth
    ? `user "${options.auth.username}"`
    : options.tls?.certFile
      ? `the user named by the client certificate ${options.tls.certFile} (its CN)`
      : "an unauthenticated client";
  if (/permission denied/.test(error.message))
    return new KubeletError(
      "PermissionDenied",
      `etcd denied ${action} to ${user}: permission denied (the kubelet needs readwrite on the key /registry/nodes/<node> ` +
        `and the prefix /registry/hosts/<node>/; kubelet fleet needs read on /registry/)`,
      { cause: error },
    );
  if (/authentication failed|invalid user ID or password/.test(error.message))
    return new KubeletError(
      "Unauthenticated",
      `etcd refused ${user} while ${action}: authentication failed, invalid user name or password`,
      { cause: error },
    );
  const unreachable =
    /No connection established\. Last error: (?:\w*Error(?: \[\w+\])?: )?(.*?)\.?(?: Resolution note:.*)?$/s.exec(
      error.message,
    );
  if (unreachable) {
    const cause = unreachable[1]!;
    const refusedCertificate = /ALERT_BAD_CERTIFICATE|ALERT_CERTIFICATE_REQUIRED|ALERT_UNKNOWN_CA/.test(cause);
    return new KubeletError(
      refusedCertificate ? "CertificateRefused" : "Unavailable",
      refusedCertificate
        ? `etcd (${options.endpoints.join(", ")}) refused ${options.tls?.certFile ? `the client certificate ${options.tls.certFile}` : "a client without a certificate"} while ${action} (${cause}): give a client certificate signed by a CA in etcd's --trusted-ca-file`
        : `cannot reach etcd (${options.endpoints.join(", ")}) while ${action}: ${cause}`,
      { cause: error },
    );
  }
  return error;
}
