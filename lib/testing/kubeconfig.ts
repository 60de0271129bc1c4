// A kubeconfig file for kubectl and the Python client: one HTTPS server, its CA and a bearer token.
import { writeFileSync } from "node:fs";

/** Writes `file` naming `server` (https://…), trusted with `caFile`, as the user holding `token`. */
export function writeKubeconfig(file: string, server: string, caFile: string, token: string): void {
  writeFileSync(
    file,
    JSON.stringify({
      apiVersion: "v1",
      kind: "Config",
      clusters: [{ name: "server", cluster: { server, "certificate-authority": caFile } }],
      users: [{ name: "user", user: { token } }],
      contexts: [{ name: "server", context: { cluster: "server", user: "user" } }],
      "current-context": "server",
    }),
  );
}
