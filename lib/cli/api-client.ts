// How this node's own commands reach its Kubernetes API: the https address of the info server's port, the CA that
// signs its serving certificate (the self-signed one the kubelet writes, or the operator's), the name to verify
// it by, and the local admin credential (readable by root only); and a small client that GETs JSON or a Table
// and turns a Status into kubectl's `Error from server (Reason): message`.
import { X509Certificate } from "node:crypto";
import { readFile } from "node:fs/promises";
import { request } from "node:https";
import { isIP } from "node:net";
import { hostname } from "node:os";
import { join } from "node:path";
import { KubeletError } from "../api/types.ts";
import type { KubeletConfig } from "../config/config-types.ts";
import { adminTokenPath } from "../server/authn/admin-token.ts";

/** Where the API is and how to trust and authenticate to it. */
export interface ApiConnection {
  /** `https://127.0.0.1:10250` */
  server: string;
  host: string;
  port: number;
  /** PEM of the CA to trust; undefined: the system's roots. */
  ca?: string;
  /** Where `ca` came from, for messages. */
  caSource: string;
  /** The name to verify the certificate by when it does not name `host` (kubeconfig's tls-server-name). */
  tlsServerName?: string;
  token: string;
  tokenFile: string;
  nodeName: string;
}

/** The serving certificate this configuration serves: the operator's, or the self-signed one under --cert_dir. */
export function servingCertificatePath(config: KubeletConfig): string | undefined {
  if (config.tlsCertFile) return config.tlsCertFile;
  if (config.clientCaFile) return join(config.certDir || join(config.rootDir, "pki"), "kubelet.crt");
  return undefined;
}

const PEM = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;

/** The CA of a serving certificate file: the top of its chain when that signs itself (a self-signed certificate is its own CA). */
function chainRoot(pem: string): string | undefined {
  const blocks = pem.match(PEM) ?? [];
  const top = blocks.at(-1);
  if (!top) return undefined;
  const cert = new X509Certificate(top);
  return cert.checkIssued(cert) && cert.verify(cert.publicKey) ? `${top}\n` : undefined;
}

/** The name to verify `cert` by when it does not name `host`: its first DNS name, else its CN. */
function serverName(cert: X509Certificate, host: string): string | undefined {
  const names = (cert.subjectAltName ?? "").split(/,\s*/);
  if (names.some((n) => n === `IP Address:${host}` || n === `DNS:${host}`)) return undefined;
  const dns = names.find((n) => n.startsWith("DNS:"))?.slice(4);
  return dns ?? /CN=([^\n,]+)/.exec(cert.subject)?.[1];
}

const fail = (message: string) => new KubeletError("ApiUnavailable", message);

/** The connection to this node's API under `config`; refuses, saying why and what to do, when there is none. */
export async function localConnection(
  config: KubeletConfig,
  options: { certificateAuthority?: string } = {},
): Promise<ApiConnection> {
  if (!config.enableServer) throw fail("the kubelet's server is off (--enable_server=false): there is no API to reach");
  if (!config.enableDebuggingHandlers)
    throw fail(
      "the Kubernetes API is served with the debugging handlers, which are off (--enable_debugging_handlers=false)",
    );
  const certFile = servingCertificatePath(config);
  if (!certFile)
    throw fail(
      `the kubelet serves plain HTTP on port ${config.port} (no --tls_cert_file, no --client_ca_file), and kubectl sends no token over http: give --tls_cert_file/--tls_private_key_file, or --client_ca_file to serve the self-signed certificate the kubelet writes under --cert_dir`,
    );
  let pem: string;
  try {
    pem = await readFile(certFile, "utf8");
  } catch (error) {
    throw fail(
      `cannot read the serving certificate "${certFile}": ${(error as Error).message}${config.tlsCertFile ? "" : " (the kubelet writes it when it starts: start it first)"}`,
    );
  }
  const host = ["0.0.0.0", "::", ""].includes(config.address) ? "127.0.0.1" : config.address;
  const [first] = pem.match(PEM) ?? [];
  if (!first) throw fail(`the serving certificate "${certFile}" holds no PEM certificate`);
  const given = options.certificateAuthority;
  const ca = given
    ? await readFile(given, "utf8").catch((e: Error) => {
        throw fail(`cannot read --certificate-authority "${given}": ${e.message}`);
      })
    : chainRoot(pem);
  const tokenFile = adminTokenPath(config);
  let token: string;
  try {
    token = (await readFile(tokenFile, "utf8")).trim();
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "EACCES")
      throw fail(
        `cannot read the admin token "${tokenFile}": permission denied (it is readable by root only, as it grants system:masters): run this as root, e.g. with sudo`,
      );
    if (code === "ENOENT")
      throw fail(
        `there is no admin token at "${tokenFile}": the kubelet writes it when it starts (kubelet run); start it first`,
      );
    throw fail(`cannot read the admin token "${tokenFile}": ${(error as Error).message}`);
  }
  if (!token)
    throw fail(`the admin token "${tokenFile}" is empty: delete it and restart the kubelet to have one generated`);
  const tlsServerName = serverName(new X509Certificate(first), host);
  return {
    server: `https://${isIP(host) === 6 ? `[${host}]` : host}:${config.port}`,
    host,
    port: config.port,
    ...(ca ? { ca } : {}),
    caSource: given ? given : ca ? certFile : "the system's trusted roots",
    ...(tlsServerName ? { tlsServerName } : {}),
    token,
    tokenFile,
    nodeName: (config.hostnameOverride || hostname()).toLowerCase(),
  };
}

/** kubectl's Accept for server-side printing. */
export const TABLE_ACCEPT =
  "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";

/** A GET of the API. */
export interface ApiClient {
  get<T = unknown>(path: string, options?: { table?: boolean }): Promise<T>;
}

/**
 * An error as kubectl prints a server's Status: `Error from server (NotFound): pods "x" not found`; the Status's
 * own message is kept as `statusMessage` (what kubectl prints where it shows err.Error()).
 */
function serverError(status: number, text: string): KubeletError & { statusMessage: string } {
  let reason = String(status);
  let message = text.trim();
  try {
    const body = JSON.parse(text) as { kind?: string; reason?: string; message?: string };
    if (body.kind === "Status") {
      reason = body.reason ?? "Unknown";
      message = body.message ?? "";
    }
  } catch {
    // not a Status: the text itself is the message
  }
  return Object.assign(new KubeletError("ApiError", `Error from server (${reason}): ${message}`), {
    statusMessage: message,
  });
}

export function createApiClient(connection: ApiConnection): ApiClient {
  return {
    get: (path, options = {}) =>
      new Promise((resolve, reject) => {
        const req = request(
          {
            host: connection.host,
            port: connection.port,
            path,
            method: "GET",
            headers: {
              authorization: `Bearer ${connection.token}`,
              accept: options.table ? TABLE_ACCEPT : "application/json",
              "user-agent": "kubelet-cli",
            },
            ...(connection.ca ? { ca: connection.ca } : {}),
            ...(connection.tlsServerName ? { servername: connection.tlsServerName } : {}),
            timeout: 30_000,
          },
          (res) => {
            const chunks: Buffer[] = [];
            res.on("data", (chunk: Buffer) => chunks.push(chunk));
            res.on("end", () => {
              const text = Buffer.concat(chunks).toString("utf8");
              if ((res.statusCode ?? 500) >= 300) return reject(serverError(res.statusCode ?? 500, text));
              try {
                resolve(JSON.parse(text));
              } catch (error) {
                reject(
                  new KubeletError(
                    "ApiError",
                    `the API answered ${path} with what is not JSON: ${(error as Error).message}`,
                  ),
                );
              }
            });
          },
        );
        req.on("timeout", () => req.destroy(new Error("no answer within 30s")));
        req.on("error", (error) =>
          reject(
            new KubeletError(
              "ApiUnavailable",
              `cannot reach the kubelet's API at ${connection.server}: ${error.message}`,
            ),
          ),
        );
        req.end();
      }),
  };
}
