import { afterAll, afterEach, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect, type TLSSocket } from "node:tls";
import { createTestCa } from "../testing/certificates.ts";
import { listenTlsHttp, type TlsHttpOptions, type TlsHttpServer } from "./tls-http.ts";

const dir = mkdtempSync(join(tmpdir(), "tls-http-"));
const ca = createTestCa(dir, "tls-http-ca");
const servingA = ca.server("a", { ips: ["127.0.0.1"] });
const servingB = ca.server("b", { ips: ["127.0.0.1"] });
const client = ca.client("ops", ["monitoring", "team"]);
const pem = (path: string) => readFileSync(path, "utf8");
const secure = (files: { certFile: string; keyFile: string }) => ({
  cert: pem(files.certFile),
  key: pem(files.keyFile),
  ca: pem(ca.caFile),
  requestCert: true,
  rejectUnauthorized: false,
});

let running: TlsHttpServer | undefined;
afterEach(async () => {
  await running?.stop();
  running = undefined;
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const start = async (overrides: Partial<TlsHttpOptions> = {}) => {
  running = await listenTlsHttp({
    hostname: "127.0.0.1",
    port: 0,
    secure: secure(servingA),
    idleTimeoutMs: 0,
    headersTimeoutMs: 10_000,
    request: (incoming, outgoing) => {
      const socket = incoming.socket as TLSSocket;
      outgoing.end(JSON.stringify({ authorized: socket.authorized, subject: socket.getPeerCertificate().subject }));
    },
    upgrade: (_incoming, socket) => socket.end("HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\n\r\n"),
    ...overrides,
  });
  return running;
};

/** A TLS connection to the server, with the client certificate; resolves once connected. */
const open = (port: number, withCert = true) =>
  new Promise<{ socket: TLSSocket; received: () => string; closed: Promise<number> }>((resolve) => {
    let text = "";
    const socket = connect({
      host: "127.0.0.1",
      port,
      ca: pem(ca.caFile),
      ...(withCert ? { cert: pem(client.certFile), key: pem(client.keyFile) } : {}),
    });
    socket.on("data", (chunk) => (text += chunk));
    const closed = new Promise<number>((done) => socket.on("close", () => done(Date.now())));
    socket.once("secureConnect", () => resolve({ socket, received: () => text, closed }));
  });

const GET = (path: string) => `GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`;
const until = async (what: () => boolean) => {
  for (let i = 0; i < 200 && !what(); i++) await Bun.sleep(25);
  return what();
};

test("a request's socket is the TLS socket: the handler reads the client certificate's CN and O", async () => {
  const { port } = await start();
  const peer = await open(port);
  peer.socket.write(GET("/"));
  expect(await until(() => peer.received().includes("}"))).toBe(true);
  const body = JSON.parse(
    peer
      .received()
      .slice(peer.received().indexOf("\r\n\r\n") + 4)
      .replace(/^[0-9a-f]+\r\n/, ""),
  );
  expect(body).toEqual({ authorized: true, subject: { CN: "ops", O: ["monitoring", "team"] } });
  peer.socket.destroy();
});

test("an upgrade request goes to the upgrade handler", async () => {
  const { port } = await start();
  const peer = await open(port);
  peer.socket.write("GET /exec HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n");
  expect(await until(() => peer.received().startsWith("HTTP/1.1 403 Forbidden"))).toBe(true);
  peer.socket.destroy();
});

test("a connection with no request in flight is closed after the idle bound; a slower response is not cut", async () => {
  const { port } = await start({
    idleTimeoutMs: 300,
    request: (_incoming, outgoing) => void setTimeout(() => outgoing.end("slow"), 900),
  });
  const peer = await open(port);
  peer.socket.write(GET("/"));
  await peer.closed;
  expect(peer.received()).toContain("slow");
});

test("a connection that sends no whole request is closed by the header bound, idle bound or not", async () => {
  const { port } = await start({ idleTimeoutMs: 0, headersTimeoutMs: 300 });
  const peer = await open(port);
  const startedAt = Date.now();
  peer.socket.write("GET / HT");
  const closedAt = await peer.closed;
  expect(closedAt - startedAt).toBeLessThan(5_000);
  expect(peer.received()).toBe("");
});

test("setSecureContext serves the new certificate to new connections", async () => {
  const server = await start();
  const serial = async () => {
    const peer = await open(server.port);
    const serialNumber = peer.socket.getPeerCertificate().serialNumber;
    peer.socket.destroy();
    return serialNumber;
  };
  const before = await serial();
  server.setSecureContext(secure(servingB));
  const after = await serial();
  expect(before).not.toBe(after);
  expect(after).toBe(new (await import("node:crypto")).X509Certificate(pem(servingB.certFile)).serialNumber);
});

test("stop closes open connections too, at once", async () => {
  const server = await start();
  const peer = await open(server.port);
  peer.socket.write(GET("/"));
  expect(await until(() => peer.received().includes("}"))).toBe(true);
  const stoppedAt = Date.now();
  await server.stop();
  running = undefined;
  expect((await peer.closed) - stoppedAt).toBeLessThan(2_000);
});
