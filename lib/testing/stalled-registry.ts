// A registry on 127.0.0.1 whose pulls never end, for tests of what a pull in flight holds up: it answers
// /v2/ and serves a valid manifest, then starts every blob and never finishes it. Docker treats a loopback
// registry as insecure (plain HTTP); containerd needs the hosts.toml `trustStalledRegistry` writes.
import { createHash } from "node:crypto";
import { mkdirSync, writeFileSync } from "node:fs";
import { createServer, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";

export interface StalledRegistry {
  /** `127.0.0.1:PORT`. */
  host: string;
  /** An image reference on this registry (its pull stalls). */
  image(name: string): string;
  /** Resolves at the first blob request: a pull is in flight and stalled. */
  blobRequested: Promise<void>;
  /** Stops the server and drops every stalled response (the pulls then fail). */
  close(): Promise<void>;
}

const json = (body: unknown) => JSON.stringify(body);
const digest = (text: string) => `sha256:${createHash("sha256").update(text).digest("hex")}`;

/** Starts a stalled registry on a free loopback port. */
export async function startStalledRegistry(): Promise<StalledRegistry> {
  // Digests need only the right shape: no blob is ever delivered whole.
  const config = json({ architecture: "amd64", os: "linux", rootfs: { type: "layers", diff_ids: [] } });
  const manifest = json({
    schemaVersion: 2,
    mediaType: "application/vnd.docker.distribution.manifest.v2+json",
    config: {
      mediaType: "application/vnd.docker.container.image.v1+json",
      size: config.length,
      digest: digest(config),
    },
    layers: [
      {
        mediaType: "application/vnd.docker.image.rootfs.diff.tar.gzip",
        size: 50_000_000,
        digest: digest("a layer that never arrives"),
      },
    ],
  });
  const stalled = new Set<ServerResponse>();
  let blob: () => void = () => {};
  const blobRequested = new Promise<void>((resolve) => (blob = resolve));
  const server = createServer((request, response) => {
    const path = (request.url ?? "").split("?")[0]!;
    if (path === "/v2/" || path === "/v2") {
      response.writeHead(200, {
        "Content-Type": "application/json",
        "Docker-Distribution-API-Version": "registry/2.0",
      });
      response.end("{}");
    } else if (/^\/v2\/.+\/manifests\//.test(path)) {
      response.writeHead(200, {
        "Content-Type": "application/vnd.docker.distribution.manifest.v2+json",
        "Content-Length": String(Buffer.byteLength(manifest)),
        "Docker-Content-Digest": digest(manifest),
      });
      response.end(request.method === "HEAD" ? undefined : manifest);
    } else if (/^\/v2\/.+\/blobs\//.test(path)) {
      // Headers, one byte, then nothing: the pull waits on it for good.
      blob();
      response.writeHead(200, { "Content-Type": "application/octet-stream", "Content-Length": "50000000" });
      if (request.method !== "HEAD") response.write("\x1f");
      stalled.add(response);
    } else {
      response.writeHead(404, { "Content-Type": "application/json" });
      response.end(json({ errors: [{ code: "NAME_UNKNOWN", message: `no route for ${path}` }] }));
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const host = `127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    host,
    image: (name) => `${host}/${name}:stalled`,
    blobRequested,
    close: () =>
      new Promise<void>((resolve) => {
        for (const response of stalled) response.destroy();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Lets containerd pull from `host` over plain HTTP: a hosts.toml in the test containerd's certs.d (see services.sh). */
export function trustStalledRegistry(servicesDir: string, host: string): void {
  const dir = join(servicesDir, "containerd", "certs.d", host);
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, "hosts.toml"),
    `server = "http://${host}"\n[host."http://${host}"]\n  capabilities = ["pull", "resolve"]\n`,
  );
}
