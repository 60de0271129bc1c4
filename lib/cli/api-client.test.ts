import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DEFAULT_CONFIG, type KubeletConfig } from "../config/config-types.ts";
import { selfSignedServingFiles } from "../server/self-signed.ts";
import { createTestCa } from "../testing/certificates.ts";
import { createApiClient, localConnection } from "./api-client.ts";

const dir = mkdtempSync(join(tmpdir(), "kubelet-api-client-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A root dir with the self-signed serving pair the kubelet writes (for host "edge-1") and an admin token. */
async function node(name: string): Promise<KubeletConfig> {
  const rootDir = join(dir, name);
  const config: KubeletConfig = { ...DEFAULT_CONFIG, rootDir, clientCaFile: join(dir, "ca.crt"), port: 10250 };
  await selfSignedServingFiles(config, "edge-1");
  writeFileSync(join(rootDir, "admin-token"), "secret-token\n", { mode: 0o600 });
  return config;
}

describe("the local connection", () => {
  test("trusts the self-signed serving certificate, verifies it by the name it holds, and uses the admin token", async () => {
    const config = await node("a");
    const connection = await localConnection(config);
    expect(connection.server).toBe("https://127.0.0.1:10250");
    expect(connection.ca).toBe(readFileSync(join(config.rootDir, "pki/kubelet.crt"), "utf8"));
    expect(connection.tlsServerName).toBe("edge-1");
    expect(connection.token).toBe("secret-token");
  });

  test("an operator's certificate signed by a CA is verified against --certificate-authority, by its IP when it names it", async () => {
    const ca = createTestCa(dir, "ops-ca");
    const served = ca.server("kubelet", { ips: ["127.0.0.1"] });
    const config = { ...(await node("b")), tlsCertFile: served.certFile, tlsPrivateKeyFile: served.keyFile };
    const connection = await localConnection(config, { certificateAuthority: ca.caFile });
    expect(connection.ca).toBe(readFileSync(ca.caFile, "utf8"));
    expect(connection.tlsServerName).toBeUndefined();
    expect((await localConnection(config)).caSource).toBe("the system's trusted roots");
  });

  test("is refused, saying why, for a plain HTTP server, no server, or no admin token yet", async () => {
    const plain = { ...(await node("c")), clientCaFile: "" };
    await expect(localConnection(plain)).rejects.toThrow("kubectl sends no token over http");
    await expect(localConnection({ ...plain, enableServer: false })).rejects.toThrow("--enable_server=false");
    const config = await node("d");
    rmSync(join(config.rootDir, "admin-token"));
    await expect(localConnection(config)).rejects.toThrow(
      `there is no admin token at "${join(config.rootDir, "admin-token")}": the kubelet writes it when it starts`,
    );
  });
});

describe("the API client", () => {
  test("GETs over TLS with the token and kubectl's Table Accept, and words a Status as kubectl prints it", async () => {
    const ca = createTestCa(dir, "client-ca");
    const served = ca.server("api", { ips: ["127.0.0.1"] });
    const seen: Array<{ auth?: string; accept?: string }> = [];
    const server = createServer(
      { cert: readFileSync(served.certFile), key: readFileSync(served.keyFile) },
      (req, res) => {
        seen.push({ auth: req.headers.authorization, accept: req.headers.accept });
        res.setHeader("content-type", "application/json");
        if (req.url === "/missing") {
          res.statusCode = 404;
          return res.end(
            JSON.stringify({ kind: "Status", reason: "NotFound", message: 'pods "x" not found', code: 404 }),
          );
        }
        res.end(JSON.stringify({ ok: true }));
      },
    );
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    try {
      const port = (server.address() as AddressInfo).port;
      const client = createApiClient({
        server: `https://127.0.0.1:${port}`,
        host: "127.0.0.1",
        port,
        ca: readFileSync(ca.caFile, "utf8"),
        caSource: ca.caFile,
        token: "t0k",
        tokenFile: "",
        nodeName: "n",
      });
      expect(await client.get("/ok", { table: true })).toEqual({ ok: true });
      expect(seen[0]!.auth).toBe("Bearer t0k");
      expect(seen[0]!.accept).toStartWith("application/json;as=Table;v=v1;g=meta.k8s.io");
      await expect(client.get("/missing")).rejects.toThrow('Error from server (NotFound): pods "x" not found');
    } finally {
      server.close();
    }
  });
});
