import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DEFAULT_CONFIG, type KubeletConfig } from "../config/config-types.ts";
import { selfSignedCertificate, selfSignedServingFiles } from "../server/self-signed.ts";
import { createStreamClient } from "./stream-client.ts";

const dir = mkdtempSync(join(tmpdir(), "kubelet-stream-client-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A kubelet's root dir with its self-signed serving pair (host "edge-1") and admin token. */
async function tlsNode(port: number): Promise<KubeletConfig> {
  const rootDir = mkdtempSync(join(dir, "node-"));
  const config: KubeletConfig = { ...DEFAULT_CONFIG, rootDir, clientCaFile: join(dir, "ca.crt"), port };
  await selfSignedServingFiles(config, "edge-1");
  writeFileSync(join(rootDir, "admin-token"), "secret-token\n", { mode: 0o600 });
  return config;
}

/** An https server on a free loopback port that records the credentials it is sent. */
function serve(tls: { cert: string; key: string }, seen: Array<string | null>) {
  return Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    tls,
    fetch(request) {
      seen.push(request.headers.get("authorization"));
      return new Response("log line\n");
    },
  });
}

describe("the local API client", () => {
  test("over https trusts only the kubelet's own serving certificate, by the name it holds, and sends the admin token to it", async () => {
    const seen: Array<string | null> = [];
    const probe = await tlsNode(0);
    const pki = join(probe.rootDir, "pki");
    const server = serve(
      { cert: readFileSync(join(pki, "kubelet.crt"), "utf8"), key: readFileSync(join(pki, "kubelet.key"), "utf8") },
      seen,
    );
    try {
      const client = await createStreamClient({ ...probe, address: "0.0.0.0", port: server.port! });
      expect(client.url("/x")).toBe(`https://127.0.0.1:${server.port}/x`);
      expect(await (await client.fetch("/api/v1/namespaces/default/pods/web/log")).text()).toBe("log line\n");
      expect(seen).toEqual(["Bearer secret-token"]);
    } finally {
      server.stop(true);
    }
  });

  test("over https a server with another certificate on the kubelet's port is refused before the token is sent", async () => {
    const seen: Array<string | null> = [];
    const server = serve(selfSignedCertificate("edge-1", new Date()), seen);
    try {
      const client = await createStreamClient(await tlsNode(server.port!));
      await expect(client.fetch("/api/v1/namespaces/default/pods/web/log")).rejects.toThrow();
      expect(seen).toEqual([]);
    } finally {
      server.stop(true);
    }
  });

  test("over plain http talks to loopback when the kubelet listens on every address, with the admin token", async () => {
    const seen: Array<{ url: string; authorization: string | undefined }> = [];
    const config = { ...DEFAULT_CONFIG, address: "0.0.0.0", port: 10250, rootDir: "/var/lib/kubelet" };
    const client = await createStreamClient(
      config,
      {},
      {
        readToken: (path) => (path === "/var/lib/kubelet/admin-token" ? "secret\n" : ""),
        fetch: (async (url: string, init: RequestInit) => {
          seen.push({ url, authorization: (init.headers as Record<string, string>).authorization });
          return new Response("ok");
        }) as typeof fetch,
      },
    );
    await client.fetch("/api/v1/namespaces/default/pods/web/log");
    expect(seen).toEqual([
      { url: "http://127.0.0.1:10250/api/v1/namespaces/default/pods/web/log", authorization: "Bearer secret" },
    ]);
    expect((await createStreamClient({ ...config, address: "10.0.0.5" }, {}, { readToken: () => "t" })).url("/x")).toBe(
      "http://10.0.0.5:10250/x",
    );
  });

  test("an unreadable admin token names the file and says to run as root", async () => {
    const denied = Object.assign(new Error("EACCES"), { code: "EACCES" });
    const config = { ...DEFAULT_CONFIG, rootDir: "/var/lib/kubelet" };
    await expect(
      createStreamClient(
        config,
        {},
        {
          readToken: () => {
            throw denied;
          },
        },
      ),
    ).rejects.toThrow(
      'cannot read the admin token "/var/lib/kubelet/admin-token": permission denied (it is readable by root only): run this as root, e.g. with sudo',
    );
  });
});
