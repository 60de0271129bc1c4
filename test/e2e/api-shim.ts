// kubectl's way in while the node does not serve discovery and pod reads itself (the "api" work): a TLS front that
// answers /version, /api, /apis, /api/v1 and GET of one pod (from the kubelet's /pods/{ns}/{name}), and hands every
// other connection to the kubelet's TLS port byte for byte, WebSocket upgrades included. apiFront() uses it only when
// the kubelet answers /api with a 404, so the tests run unchanged against the real discovery once it is there.
import { connect, createServer } from "node:tls";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createTestCa } from "../../lib/testing/certificates.ts";
import { freePortNumber } from "../../lib/testing/ports.ts";
import { Kubelet } from "./harness-kubelet.ts";
import type { AddressInfo } from "node:net";
import { POD_SUBRESOURCES } from "../../lib/server/apiserver/pod-subresources.ts";

const json = (body: unknown) => {
  const text = JSON.stringify(body);
  return `HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(text)}\r\nConnection: close\r\n\r\n${text}`;
};

const DISCOVERY: Record<string, unknown> = {
  "/version": { major: "1", minor: "32", gitVersion: "v1.32.0", platform: "linux/amd64" },
  "/api": { kind: "APIVersions", versions: ["v1"], serverAddressByClientCIDRs: [] },
  "/apis": { kind: "APIGroupList", apiVersion: "v1", groups: [] },
  "/api/v1": {
    kind: "APIResourceList",
    groupVersion: "v1",
    resources: [
      { name: "pods", singularName: "pod", namespaced: true, kind: "Pod", verbs: ["get", "list"], shortNames: ["po"] },
      ...POD_SUBRESOURCES,
    ],
  },
};

/** The address kubectl is given: the kubelet's own TLS port when it serves /api, else a front started here. */
export async function apiFront(
  kubelet: { port: number; token: string },
  tls: { certFile: string; keyFile: string },
): Promise<{ port: number; shimmed: boolean; close(): void }> {
  const probe = await fetch(`https://127.0.0.1:${kubelet.port}/api`, {
    headers: { authorization: `Bearer ${kubelet.token}` },
    tls: { rejectUnauthorized: false },
  } as RequestInit);
  if (probe.status !== 404) return { port: kubelet.port, shimmed: false, close() {} };
  const pod = async (namespace: string, name: string) => {
    const response = await fetch(`https://127.0.0.1:${kubelet.port}/pods/${namespace}/${name}`, {
      headers: { authorization: `Bearer ${kubelet.token}` },
      tls: { rejectUnauthorized: false },
    } as RequestInit);
    return (await response.json()) as Record<string, unknown>;
  };
  const server = createServer({ cert: readFileSync(tls.certFile), key: readFileSync(tls.keyFile) }, (client) => {
    let head = Buffer.alloc(0);
    const onData = async (chunk: Buffer) => {
      head = Buffer.concat([head, chunk]);
      if (!head.includes("\r\n\r\n")) return;
      client.off("data", onData);
      const [method, target = ""] = head.toString("latin1").split(" ", 2);
      const path = target.split("?")[0]!;
      const podPath = /^\/api\/v1\/namespaces\/([^/]+)\/pods\/([^/]+)$/.exec(path);
      if (method === "GET" && DISCOVERY[path]) return client.end(json(DISCOVERY[path]));
      if (method === "GET" && podPath)
        return client.end(json({ kind: "Pod", apiVersion: "v1", ...(await pod(podPath[1]!, podPath[2]!)) }));
      const upstream = connect({ host: "127.0.0.1", port: kubelet.port, rejectUnauthorized: false }, () => {
        upstream.write(head);
        client.pipe(upstream);
        upstream.pipe(client);
      });
      upstream.on("error", () => client.destroy());
      client.on("error", () => upstream.destroy());
    };
    client.on("data", onData);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { port: (server.address() as AddressInfo).port, shimmed: true, close: () => server.close() };
}

/**
 * Starts a kubelet with `flags` serving TLS (the certificate for 127.0.0.1 of a test CA, files `dir`/`caName`*) and
 * the API front before it, and writes a kubeconfig with the admin token; `env` is what kubectl runs with
 * (KUBECONFIG, and HOME: `dir`/home).
 */
export async function kubeletForKubectl(dir: string, flags: string[], caName = "kubectl") {
  const ca = createTestCa(dir, caName);
  const cert = ca.server("kubelet", { ips: ["127.0.0.1"] });
  const kubelet = new Kubelet(
    [...flags, "--tls_cert_file", cert.certFile, "--tls_private_key_file", cert.keyFile],
    await freePortNumber(),
  );
  const https = (path: string) =>
    fetch(`https://127.0.0.1:${kubelet.port}${path}`, { tls: { rejectUnauthorized: false } } as RequestInit);
  await kubelet.waitFor("the TLS server", async () => (await https("/healthz").catch(() => undefined))?.ok, 20_000);
  const front = await apiFront({ port: kubelet.port, token: kubelet.adminToken() }, cert);
  const kubeconfig = join(dir, "kubeconfig");
  writeFileSync(
    kubeconfig,
    `apiVersion: v1
kind: Config
clusters: [{ name: node, cluster: { server: "https://127.0.0.1:${front.port}", certificate-authority: "${ca.caFile}" } }]
users: [{ name: admin, user: { token: "${kubelet.adminToken()}" } }]
contexts: [{ name: node, context: { cluster: node, user: admin, namespace: default } }]
current-context: node
`,
  );
  return { kubelet, front, env: { KUBECONFIG: kubeconfig, HOME: join(dir, "home") } };
}
