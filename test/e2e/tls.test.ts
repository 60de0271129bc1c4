// TLS as configured, end to end: `openssl s_client` against the built kubelet for the versions, suites
// and key exchange groups it allows and refuses, on Bun.serve (no client CA) and on node:tls (client
// CA, its sockets handed to node:http); a serving certificate renewed on disk is served without a restart; one expiring soon is on
// /healthz?verbose; a suite it cannot honour stops the start. The fake runtime keeps the shared daemons
// out of it.
import { afterAll, describe, expect } from "bun:test";
import { spawnSync } from "node:child_process";
import { copyFileSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { freePortNumber } from "../../lib/testing/ports.ts";
import { Kubelet, killKubeletsAfterAll, test } from "./harness-kubelet.ts";
import { removeDir, runBinary, tempDir } from "./harness.ts";

const dir = tempDir("tls");
afterAll(() => removeDir(dir));

const openssl = spawnSync("openssl", ["version"], { encoding: "utf8" });
const haveOpenssl = openssl.status === 0;

/** An RSA certificate for 127.0.0.1 named `cn`, valid `days`, as <name>.crt/.key in the test directory. */
function certificate(name: string, cn: string, days: number): { cert: string; key: string } {
  const cert = join(dir, `${name}.crt`);
  const key = join(dir, `${name}.key`);
  const made = spawnSync(
    "openssl",
    ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert, "-days", String(days)].concat([
      "-subj",
      `/CN=${cn}`,
      "-addext",
      "subjectAltName=IP:127.0.0.1",
    ]),
    { encoding: "utf8" },
  );
  if (made.status !== 0) throw new Error(`openssl req: ${made.stderr}`);
  return { cert, key };
}

/** What `openssl s_client` negotiated with `args`: the protocol, cipher, group and subject, or "refused". */
function handshake(port: number, ...args: string[]): string {
  const out = spawnSync("openssl", ["s_client", "-connect", `127.0.0.1:${port}`, ...args], {
    input: "",
    encoding: "utf8",
    timeout: 10_000,
  }).stdout;
  const cipher = /New, (TLSv[\d.]+), Cipher is (\S+)/.exec(out);
  if (!cipher) return "refused";
  const group = /Server Temp Key: (?:ECDH, )?([^,]+),/.exec(out)?.[1];
  const subject = /^subject=.*CN ?= ?(\S+)/m.exec(out)?.[1];
  return `${cipher[1]} ${cipher[2]} ${group} CN=${subject}`;
}

const curl = (url: string) => spawnSync("curl", ["-sk", url], { encoding: "utf8" }).stdout;

/** A kubelet on the fake runtime serving TLS on a free port with `files` and `flags`, a client CA when `ca`. */
async function start(files: { cert: string; key: string }, flags: string[], ca: boolean): Promise<Kubelet> {
  const root = tempDir("tls-root");
  mkdirSync(join(root, "manifests"));
  const port = await freePortNumber();
  const kubelet = new Kubelet(
    ["run", "-c", join(root, "manifests"), "--root_dir", root, "--container_runtime", "fake"]
      .concat(["--cgroups_per_qos=false", "--enforce_node_allocatable", "none", "--healthz_port", "0"])
      .concat(["--tls_cert_file", files.cert, "--tls_private_key_file", files.key, ...flags])
      .concat(ca ? ["--client_ca_file", files.cert] : []),
    port,
  );
  await kubelet.waitFor("the TLS server", () => curl(`https://127.0.0.1:${port}/healthz`) === "ok", 20_000);
  return kubelet;
}

const servers = [
  { ca: false, name: "Bun.serve (no client CA)" },
  { ca: true, name: "node:tls (client CA)" },
];

describe.skipIf(!haveOpenssl && process.env.CI !== "true")("TLS as configured (openssl s_client)", () => {
  killKubeletsAfterAll();

  test("openssl is installed (CI=true forbids skipping)", () => {
    expect(openssl.error).toBeUndefined();
  });

  for (const { ca, name } of servers) {
    test(`${name}: only the listed TLS 1.2 suite and the listed group are negotiated`, async () => {
      const files = certificate(`suites-${ca}`, "suites", 100);
      const kubelet = await start(
        files,
        ["--tls_cipher_suites", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "--tls_curve_preferences", "CurveP384"],
        ca,
      );
      expect(handshake(kubelet.port, "-tls1_2", "-cipher", "ECDHE-RSA-AES256-GCM-SHA384")).toBe("refused");
      expect(handshake(kubelet.port, "-tls1_2", "-cipher", "ECDHE-RSA-AES128-GCM-SHA256")).toBe(
        "TLSv1.2 ECDHE-RSA-AES128-GCM-SHA256 secp384r1 CN=suites",
      );
      expect(handshake(kubelet.port, "-tls1_3", "-groups", "X25519:P-256")).toBe("refused");
      expect(handshake(kubelet.port, "-tls1_3", "-groups", "P-384")).toBe(
        "TLSv1.3 TLS_AES_256_GCM_SHA384 secp384r1 CN=suites",
      );
      await kubelet.stop("SIGKILL");
    }, 60_000);

    test(`${name}: tlsMinVersion VersionTLS13 refuses TLS 1.2; the default accepts it`, async () => {
      const files = certificate(`version-${ca}`, "version", 100);
      const strict = await start(files, ["--tls_min_version", "VersionTLS13"], ca);
      expect(handshake(strict.port, "-tls1_2")).toBe("refused");
      expect(handshake(strict.port, "-tls1_3")).toStartWith("TLSv1.3 ");
      await strict.stop("SIGKILL");
      const lenient = await start(files, [], ca);
      expect(handshake(lenient.port, "-tls1_2")).toStartWith("TLSv1.2 ECDHE-RSA-");
      expect(handshake(lenient.port, "-tls1_1")).toBe("refused");
      await lenient.stop("SIGKILL");
    }, 60_000);

    test(`${name}: a certificate renewed on disk is served without a restart, and its near expiry leaves /healthz?verbose`, async () => {
      const served = certificate(`served-${ca}`, "first", 10);
      const kubelet = await start(served, [], ca);
      const pid = kubelet.child.pid;
      const verbose = () => curl(`https://127.0.0.1:${kubelet.port}/healthz?verbose`);
      expect(verbose()).toMatch(/\[!\]serving certificate .* expires at .*, in 10 day\(s\): renew it/);
      expect(handshake(kubelet.port)).toEndWith("CN=first");
      const renewed = certificate(`renewed-${ca}`, "second", 100);
      copyFileSync(renewed.key, served.key);
      copyFileSync(renewed.cert, served.cert);
      await kubelet.waitFor("the renewed certificate", () => handshake(kubelet.port).endsWith("CN=second"), 20_000);
      // The log line and the healthz line follow the swap by a moment.
      await kubelet.waitFor("the renewal's log line", () => kubelet.output.includes("serving the renewed certificate"));
      await kubelet.waitFor("healthz without the expiry", () => !verbose().includes("[!]serving certificate"));
      expect(kubelet.running && kubelet.child.pid === pid).toBe(true);
      await kubelet.stop("SIGKILL");
    }, 60_000);
  }

  test("an insecure or unknown suite, curve or version stops the start, naming the setting and the fix", () => {
    const files = certificate("refused", "refused", 100);
    const run = (...flags: string[]) => {
      const { code, stdout, stderr } = runBinary(
        ["run", "--container_runtime", "fake", "--root_dir", join(dir, "refused-root"), "--port", "0"]
          .concat(["--healthz_port", "0", "--tls_cert_file", files.cert, "--tls_private_key_file", files.key])
          .concat(flags),
        { timeoutMs: 20_000 },
      );
      // The log lines are JSON: quotes in the message arrive escaped.
      return { code, output: (stdout + stderr).replaceAll('\\"', '"') };
    };
    const insecure = run("--tls_cipher_suites", "TLS_RSA_WITH_RC4_128_SHA");
    expect(insecure.code).not.toBe(0);
    expect(insecure.output).toContain(
      "invalid --tls_cipher_suites (tlsCipherSuites): cipher suite TLS_RSA_WITH_RC4_128_SHA is insecure (RC4): remove it",
    );
    const unknown = run("--tls_curve_preferences", "P-256");
    expect(unknown.output).toContain(`curve preference "P-256" not supported or doesn't exist`);
    const version = run("--tls_min_version", "VersionTLS14");
    expect(version.output).toContain(`unknown tls version "VersionTLS14"`);
  }, 60_000);
});
