// `kubelet kubeconfig`: a kubeconfig for this node's API (the https server of the info server's port, the CA that
// signs its serving certificate, the local admin token), printed or written with --write (mode 0600, as it holds
// a credential), so `KUBECONFIG=… kubectl get pods` works with one export.
import { chmod, writeFile } from "node:fs/promises";
import { stringifyYaml } from "../api/manifest.ts";
import type { ApiConnection } from "./api-client.ts";

/** The kubeconfig (v1 Config) for `connection`: one cluster, user and context, all named after the node. */
export function kubeconfigFor(connection: ApiConnection): Record<string, unknown> {
  const name = connection.nodeName;
  return {
    apiVersion: "v1",
    kind: "Config",
    clusters: [
      {
        name,
        cluster: {
          server: connection.server,
          ...(connection.ca ? { "certificate-authority-data": Buffer.from(connection.ca).toString("base64") } : {}),
          ...(connection.tlsServerName ? { "tls-server-name": connection.tlsServerName } : {}),
        },
      },
    ],
    users: [{ name: `kubelet-admin@${name}`, user: { token: connection.token } }],
    contexts: [{ name, context: { cluster: name, user: `kubelet-admin@${name}` } }],
    "current-context": name,
    preferences: {},
  };
}

/** Prints the kubeconfig, or writes it to `write` (0600) and says where, what it trusts and how to use it. */
export async function kubeconfigCommand(
  connection: ApiConnection,
  options: { write?: string; out: NodeJS.WritableStream; err: NodeJS.WritableStream },
): Promise<number> {
  const text = stringifyYaml(kubeconfigFor(connection));
  if (!options.write) {
    options.out.write(text);
    return 0;
  }
  await writeFile(options.write, text, { mode: 0o600 });
  // An existing file keeps its mode through writeFile: the credential inside needs 0600 whatever it was.
  await chmod(options.write, 0o600);
  options.err.write(
    `kubelet: wrote ${options.write} (mode 0600): server ${connection.server}, CA from ${connection.caSource}, the admin token of ${connection.tokenFile}; use it with: export KUBECONFIG=${options.write}\n`,
  );
  return 0;
}
