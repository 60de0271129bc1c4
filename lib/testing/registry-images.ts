// Publishes a test image straight to a registry over its HTTP API (no Docker client): a base image
// from the same registry plus one layer of random bytes, so no runtime has that layer yet and a pull
// of it downloads it whole (a test registry's shared layers would otherwise be "Already exists").
import { createHash, randomBytes } from "node:crypto";
import { gzipSync } from "node:zlib";

const MANIFEST = "application/vnd.docker.distribution.manifest.v2+json";
const LAYER = "application/vnd.docker.image.rootfs.diff.tar.gzip";

export interface PublishOptions {
  /** host:port of a plain-HTTP registry. */
  registry: string;
  /** The base image in that registry, `repository:tag` (e.g. library/busybox:1.35). */
  base: string;
  /** Where the new image goes, `repository:tag`. */
  target: string;
  /** Size of the random file the added layer holds. */
  layerBytes: number;
}

const sha256 = (data: Buffer | string) => `sha256:${createHash("sha256").update(data).digest("hex")}`;

/** A tar archive of one regular file. */
function tarOf(name: string, data: Buffer): Buffer {
  const header = Buffer.alloc(512);
  const field = (text: string, offset: number, length: number) => header.write(text, offset, length, "ascii");
  field(name, 0, 100);
  field("0000644\0", 100, 8);
  field("0000000\0", 108, 8);
  field("0000000\0", 116, 8);
  field(`${data.length.toString(8).padStart(11, "0")}\0`, 124, 12);
  field(
    `${Math.floor(Date.now() / 1000)
      .toString(8)
      .padStart(11, "0")}\0`,
    136,
    12,
  );
  field("        ", 148, 8);
  field("0", 156, 1);
  field("ustar\0", 257, 6);
  field("00", 263, 2);
  const sum = header.reduce((n, byte) => n + byte, 0);
  field(`${sum.toString(8).padStart(6, "0")}\0 `, 148, 8);
  const padding = Buffer.alloc((512 - (data.length % 512)) % 512);
  return Buffer.concat([header, data, padding, Buffer.alloc(1024)]);
}

async function checked(response: Response, what: string): Promise<Response> {
  if (!response.ok) throw new Error(`cannot ${what}: ${response.status} ${await response.text()}`);
  return response;
}

/** Publishes `base` plus a layer of `layerBytes` random bytes as `target`. */
export async function publishImageWithLayer(options: PublishOptions): Promise<void> {
  const api = `http://${options.registry}/v2`;
  const [baseRepo, baseTag] = options.base.split(":");
  const [repo, tag] = options.target.split(":");
  const manifest = (await (
    await checked(
      await fetch(`${api}/${baseRepo}/manifests/${baseTag}`, { headers: { Accept: MANIFEST } }),
      `read the manifest of ${options.base}`,
    )
  ).json()) as {
    config: { digest: string };
    layers: Array<{ mediaType: string; size: number; digest: string }>;
  };
  const blob = async (digest: string) =>
    Buffer.from(
      await (await checked(await fetch(`${api}/${baseRepo}/blobs/${digest}`), `read blob ${digest}`)).arrayBuffer(),
    );
  const upload = async (data: Buffer) => {
    const digest = sha256(data);
    const started = await checked(
      await fetch(`${api}/${repo}/blobs/uploads/`, { method: "POST" }),
      `start an upload to ${repo}`,
    );
    const location = new URL(started.headers.get("location")!, `http://${options.registry}`);
    location.searchParams.set("digest", digest);
    await checked(
      await fetch(location, {
        method: "PUT",
        body: new Uint8Array(data),
        headers: { "Content-Type": "application/octet-stream" },
      }),
      `upload blob ${digest} to ${repo}`,
    );
    return digest;
  };

  const tar = tarOf("pull-filler", randomBytes(options.layerBytes));
  const layer = gzipSync(tar);
  const config = JSON.parse((await blob(manifest.config.digest)).toString("utf8")) as {
    rootfs: { diff_ids: string[] };
    history?: Array<Record<string, unknown>>;
  };
  config.rootfs.diff_ids.push(sha256(tar));
  config.history?.push({ created: new Date().toISOString(), created_by: "publishImageWithLayer" });
  const configBytes = Buffer.from(JSON.stringify(config));

  for (const base of manifest.layers) await upload(await blob(base.digest));
  const body = {
    schemaVersion: 2,
    mediaType: MANIFEST,
    config: {
      mediaType: "application/vnd.docker.container.image.v1+json",
      size: configBytes.length,
      digest: await upload(configBytes),
    },
    layers: [...manifest.layers, { mediaType: LAYER, size: layer.length, digest: await upload(layer) }],
  };
  await checked(
    await fetch(`${api}/${repo}/manifests/${tag}`, {
      method: "PUT",
      body: JSON.stringify(body),
      headers: { "Content-Type": MANIFEST },
    }),
    `publish ${options.target}`,
  );
}
