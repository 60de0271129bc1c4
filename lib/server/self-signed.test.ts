// The self-signed serving certificate: where it goes, when it is made, and that TLS accepts it.
import { afterAll, describe, expect, test } from "bun:test";
import { X509Certificate } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AddressInfo } from "node:net";
import { connect, createServer } from "node:tls";
import { selfSignedCertificate, selfSignedServingFiles } from "./self-signed.ts";

describe("self-signed serving certificate", () => {
  const root = mkdtempSync(join(tmpdir(), "self-signed-"));
  afterAll(() => rmSync(root, { recursive: true, force: true }));
  const settings = { clientCaFile: "/etc/ca.crt", tlsCertFile: "", tlsPrivateKeyFile: "", certDir: "", rootDir: root };

  test("with a client CA and no serving files, kubelet.crt and kubelet.key are generated under root_dir/pki, then reused", async () => {
    const files = await selfSignedServingFiles(settings, "node-a", new Date("2026-11-25T12:00:00Z"));
    expect(files).toEqual({
      tlsCertFile: join(root, "pki", "kubelet.crt"),
      tlsPrivateKeyFile: join(root, "pki", "kubelet.key"),
      generated: true,
    });
    const cert = new X509Certificate(readFileSync(files!.tlsCertFile));
    expect(cert.subject).toBe("CN=node-a@1795608000");
    expect(cert.subjectAltName).toBe("DNS:node-a");
    expect(cert.validTo).toBe("Nov 25 12:00:00 2027 GMT");
    expect(cert.verify(cert.publicKey)).toBe(true);
    expect(statSync(files!.tlsPrivateKeyFile).mode & 0o777).toBe(0o600);
    const again = await selfSignedServingFiles(settings, "node-a");
    expect(again?.generated).toBe(false);
    expect(new X509Certificate(readFileSync(again!.tlsCertFile)).serialNumber).toBe(cert.serialNumber);
  });

  test("--cert_dir chooses the directory", async () => {
    const files = await selfSignedServingFiles({ ...settings, certDir: join(root, "certs") }, "node-a");
    expect(files?.tlsCertFile).toBe(join(root, "certs", "kubelet.crt"));
  });

  test("nothing is generated without a client CA or when the serving files are given", async () => {
    expect(await selfSignedServingFiles({ ...settings, clientCaFile: "" }, "node-a")).toBeUndefined();
    expect(
      await selfSignedServingFiles({ ...settings, tlsCertFile: "/c.crt", tlsPrivateKeyFile: "/c.key" }, "node-a"),
    ).toBeUndefined();
  });

  test("a TLS client that trusts the certificate reaches a server using it by the host's name", async () => {
    const { cert, key } = selfSignedCertificate("node-b", new Date());
    const server = createServer({ cert, key }, (socket) => socket.end("hello"));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    try {
      const answer = await new Promise<string>((resolve, reject) => {
        const socket = connect(
          { host: "127.0.0.1", port: (server.address() as AddressInfo).port, ca: cert, servername: "node-b" },
          () => socket.once("data", (data) => resolve(data.toString())),
        );
        socket.on("error", reject);
      });
      expect(answer).toBe("hello");
    } finally {
      server.close();
    }
  });
});
