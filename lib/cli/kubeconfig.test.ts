import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, statSync, writeFileSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { parseYaml } from "../api/manifest.ts";
import type { ApiConnection } from "./api-client.ts";
import { kubeconfigCommand, kubeconfigFor } from "./kubeconfig.ts";

const dir = mkdtempSync(join(tmpdir(), "kubelet-kubeconfig-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const CONNECTION: ApiConnection = {
  server: "https://127.0.0.1:10250",
  host: "127.0.0.1",
  port: 10250,
  ca: "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n",
  caSource: "/var/lib/kubelet/pki/kubelet.crt",
  tlsServerName: "edge-1",
  token: "admin-token-value",
  tokenFile: "/var/lib/kubelet/admin-token",
  nodeName: "edge-1",
};

describe("kubelet kubeconfig", () => {
  test("names the https server, the CA as data, the name to verify by, and the admin token, in one current context", () => {
    expect(kubeconfigFor(CONNECTION)).toEqual({
      apiVersion: "v1",
      kind: "Config",
      clusters: [
        {
          name: "edge-1",
          cluster: {
            server: "https://127.0.0.1:10250",
            "certificate-authority-data": Buffer.from(CONNECTION.ca!).toString("base64"),
            "tls-server-name": "edge-1",
          },
        },
      ],
      users: [{ name: "kubelet-admin@edge-1", user: { token: "admin-token-value" } }],
      contexts: [{ name: "edge-1", context: { cluster: "edge-1", user: "kubelet-admin@edge-1" } }],
      "current-context": "edge-1",
      preferences: {},
    });
  });

  test("prints it as YAML, or writes it with mode 0600 (an existing file too) and says where", async () => {
    const out = new PassThrough();
    const err = new PassThrough();
    let printed = "";
    let said = "";
    out.on("data", (d) => (printed += d));
    err.on("data", (d) => (said += d));
    await kubeconfigCommand(CONNECTION, { out, err });
    expect(parseYaml(printed)).toEqual(kubeconfigFor(CONNECTION));
    const path = join(dir, "config");
    writeFileSync(path, "old", { mode: 0o644 });
    await kubeconfigCommand(CONNECTION, { write: path, out, err });
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(parseYaml(readFileSync(path, "utf8"))).toEqual(kubeconfigFor(CONNECTION));
    expect(said).toContain(`export KUBECONFIG=${path}`);
  });
});
