// Fleet mode against a production-like etcd: TLS on an IP endpoint, client certificates required, auth on
// with users limited to their node's keys. The compiled kubelet, and `kubelet fleet` compiled, from source
// under Bun and under Deno; certificates that do not match, wrong passwords and denied keys.
import { afterAll, beforeAll, expect } from "bun:test";
import { spawn } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:tls";
import { join } from "node:path";
import { fleetKeys } from "../../lib/node/status/fleet-reporter.ts";
import { createEtcdClient, type EtcdClient } from "../../lib/sources/etcd-client.ts";
import { etcdKeyFor } from "../../lib/sources/etcd.ts";
import { createTestCa } from "../../lib/testing/certificates.ts";
import { addNodeUser, enableAuth, startEtcdCluster, type TlsEtcdCluster } from "../../lib/testing/etcd-cluster.ts";
import { describeWithServices, KUBELET_BINARY } from "../../lib/testing/services.ts";
import { Kubelet, killKubeletsAfterAll, startKubelet, test, waitFor } from "./harness-kubelet.ts";
import { baseFlags, freePort, removeDir, removePods, tempDir } from "./harness.ts";

const root = join(import.meta.dir, "../..");
const RUNTIMES: Record<string, string[]> = {
  compiled: [KUBELET_BINARY],
  "source under Bun": [process.execPath, join(root, "bin/kubelet.ts")],
  "source under Deno": [join(root, "node_modules/.bin/deno"), "run", "-A", join(root, "bin/kubelet.ts")],
};

/**
 * Runs `kubelet fleet …` (compiled unless `command` says otherwise) with etcdctl's variables in `env`; without
 * blocking, so a TLS server in this process can answer it.
 */
async function fleet(args: string[], env: Record<string, string>, command = RUNTIMES.compiled!) {
  const [file, ...prefix] = command;
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("ETCDCTL_")));
  const child = spawn(file!, [...prefix, "fleet", ...args], { env: { ...clean, ...env }, timeout: 60_000 });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d) => (stdout += d));
  child.stderr.on("data", (d) => (stderr += d));
  const code = await new Promise<number | null>((resolve) => child.once("close", resolve));
  return { code, stdout, stderr };
}

describeWithServices(
  "fleet mode on an etcd with TLS, client certificates and users limited to their node",
  (services) => {
    let cluster: TlsEtcdCluster;
    let client: EtcdClient;
    let kubelet: Kubelet;
    let denied: Kubelet;
    let wrongPassword: Kubelet;
    const dir = tempDir("fleet-tls");
    const node = "e2e-fleet-tls";
    const pods = ["e2e-fleet-tls-a", "e2e-fleet-tls-b"];
    const podList = (names: string[]) =>
      JSON.stringify(
        names.map((name) => ({
          apiVersion: "v1",
          kind: "Pod",
          metadata: { name },
          spec: {
            terminationGracePeriodSeconds: 1,
            containers: [{ name: "app", image: services.busybox, command: ["sleep", "3600"] }],
          },
        })),
      );
    /** etcdctl's variables for root: its certificate authenticates it. */
    let asRoot: Record<string, string>;

    beforeAll(async () => {
      cluster = await startEtcdCluster(1, { tls: true });
      enableAuth(cluster);
      asRoot = {
        ETCDCTL_ENDPOINTS: cluster.endpoints.join(","),
        ETCDCTL_CACERT: cluster.ca.caFile,
        ETCDCTL_CERT: cluster.root.certFile,
        ETCDCTL_KEY: cluster.root.keyFile,
      };
      addNodeUser(cluster, node, { password: "node-secret" });
      addNodeUser(cluster, "e2e-fleet-tls-denied", { nodeKey: false });
      client = createEtcdClient({ endpoints: cluster.endpoints, tls: { caFile: cluster.ca.caFile, ...cluster.root } });
      await client.put(etcdKeyFor(node), podList(["e2e-fleet-tls-a"]));
      // By name and password; the certificate (any the CA signed) only opens the TLS connection.
      const connection = cluster.ca.client("e2e-fleet-tls-connection");
      const config = (name: string, settings: object) => {
        const path = join(dir, name);
        writeFileSync(path, JSON.stringify({ endpoints: cluster.endpoints, caFile: cluster.ca.caFile, ...settings }));
        return path;
      };
      const flags = (hostname: string, etcdConfig: string, rootDir: string) => [
        "run",
        ...baseFlags(services, join(dir, rootDir)),
        ...["--etcd_config", etcdConfig, "--hostname_override", hostname, "--node_status_update_frequency", "1s"],
      ];
      [kubelet, denied, wrongPassword] = await Promise.all([
        startKubelet(
          flags(node, config("node.yaml", { ...connection, username: node, password: "node-secret" }), "root-a"),
        ),
        // A user whose role lacks /registry/nodes/<node>: authenticated by its certificate's CN.
        startKubelet(
          flags(
            "e2e-fleet-tls-denied",
            config("denied.yaml", cluster.ca.client("e2e-fleet-tls-denied")),
            "root-denied",
          ),
        ),
        // Never healthy (its only source never answers): not waited for.
        new Kubelet(
          flags(
            "e2e-fleet-tls-wrong",
            config("wrong.yaml", { ...connection, username: node, password: "wrong" }),
            "root-wrong",
          ),
          await freePort(),
        ),
      ]);
    });
    killKubeletsAfterAll();
    afterAll(async () => {
      removePods(services, ...pods);
      client?.close();
      await cluster?.stop();
      removeDir(dir);
    });

    test("a kubelet as a user limited to its node's keys reads its pods and writes its node, pod statuses and events", async () => {
      await waitFor("the pod Running in etcd", async () => {
        const { entry } = await client.get(fleetKeys.status(node, "default", "e2e-fleet-tls-a"));
        return entry && JSON.parse(entry.value).phase === "Running";
      });
      expect((await client.get(fleetKeys.node(node))).entry?.lease).not.toBe("0");
      const events = (await client.list(fleetKeys.events(node))).entries.map((e) => JSON.parse(e.value));
      expect(events.map((e) => e.reason)).toContain("Started");
    });

    for (const [runtime, command] of Object.entries(RUNTIMES))
      test(`kubelet fleet (${runtime}) lists the fleet from an https IP endpoint with etcdctl's variables`, async () => {
        await waitFor("the node in etcd", async () => (await client.get(fleetKeys.node(node))).entry);
        const result = await fleet(["-o", "json"], asRoot, command);
        expect(result.stderr).toBe("");
        const view = JSON.parse(result.stdout) as { nodes: Array<{ name: string }>; pods: Array<{ name: string }> };
        expect(view.nodes.map((n) => n.name)).toContain(node);
        expect(view.pods.map((p) => p.name)).toContain("e2e-fleet-tls-a");
      });

    test("kubelet fleet takes --etcd_config over etcdctl's variables, and a DNS endpoint its certificate names", async () => {
      const config = join(dir, "root.yaml");
      const dns = cluster.endpoints[0]!.replace("127.0.0.1", "localhost");
      writeFileSync(config, JSON.stringify({ endpoints: [dns], caFile: cluster.ca.caFile, ...cluster.root }));
      // The variables point at nothing: the flag wins.
      const result = await fleet(["events", "--etcd_config", config], {
        ...asRoot,
        ETCDCTL_ENDPOINTS: "https://127.0.0.1:1",
      });
      expect(result.stderr).toBe("");
      expect(result.stdout).toMatch(
        new RegExp(`^${node}\\s+\\S+\\s+Normal\\s+Started\\s+pod/default/e2e-fleet-tls-a`, "m"),
      );
    });

    test("a server certificate for other names is refused, naming the endpoint and what the certificate is for (compiled, Bun, Deno)", async () => {
      const other = createTestCa(dir, "other-ca").server("other", { ips: ["127.0.0.9"], dns: ["etcd.example"] });
      const port = await freePort();
      const server: Server = createServer({
        cert: readFileSync(other.certFile),
        key: readFileSync(other.keyFile),
        ALPNProtocols: ["h2"],
      });
      await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
      try {
        for (const command of Object.values(RUNTIMES))
          for (const host of ["127.0.0.1", "localhost"]) {
            const ca = join(dir, "other-ca.crt");
            const result = await fleet(
              [],
              { ETCDCTL_ENDPOINTS: `https://${host}:${port}`, ETCDCTL_CACERT: ca },
              command,
            );
            expect({ command: command.join(" "), code: result.code }).toEqual({ command: command.join(" "), code: 1 });
            expect(result.stderr).toContain(
              `etcd endpoint https://${host}:${port} presents a certificate for IP Address:127.0.0.9, DNS:etcd.example, not for ${host}`,
            );
          }
      } finally {
        server.close();
      }
    });

    test("a client without a certificate, a wrong password and a key outside the user's role are refused as such", async () => {
      const { ETCDCTL_CERT: _, ETCDCTL_KEY: __, ...noCertificate } = asRoot;
      expect((await fleet([], noCertificate)).stderr).toContain("refused a client without a certificate");
      const connection = cluster.ca.client("e2e-fleet-tls-connection");
      const asNode = { ...asRoot, ETCDCTL_CERT: connection.certFile, ETCDCTL_KEY: connection.keyFile };
      const wrong = await fleet([], { ...asNode, ETCDCTL_USER: `${node}:wrong` });
      expect(wrong.code).toBe(1);
      expect(wrong.stderr).toContain(`etcd refused user "${node}"`);
      expect(wrong.stderr).toContain("authentication failed, invalid user name or password");
      // The node's user may not read the other nodes: kubelet fleet needs read on /registry/.
      const limited = await fleet([], { ...asNode, ETCDCTL_USER: `${node}:node-secret` });
      expect(limited.stderr).toMatch(
        new RegExp(`etcd denied reading /registry/\\S+ to user "${node}": permission denied`),
      );
      // A kubelet with the wrong password says so from its source; one whose role lacks its node key says which
      // keys were refused. Both keep running.
      await wrongPassword.waitFor("the refused login in the log", () =>
        new RegExp(
          `etcd source /registry/hosts/e2e-fleet-tls-wrong/kubelet: etcd refused user \\\\"${node}\\\\" while reading /registry/hosts/e2e-fleet-tls-wrong/…: authentication failed`,
        ).test(wrongPassword.output),
      );
      await denied.waitFor("the denied write in the log", () =>
        /cannot write node e2e-fleet-tls-denied's status to etcd: etcd denied writing \/registry\/nodes\/e2e-fleet-tls-denied\b[^"]* permission denied/.test(
          denied.output,
        ),
      );
    });

    test("a kubelet logged in with a password keeps its watch and its lease through an etcd restart", async () => {
      const from = kubelet.output.length;
      await cluster.kill(0);
      await cluster.restart(0);
      await client.put(etcdKeyFor(node), podList(["e2e-fleet-tls-a", "e2e-fleet-tls-b"]));
      await waitFor(
        "the new pod Running in etcd",
        async () => {
          const { entry } = await client.get(fleetKeys.status(node, "default", "e2e-fleet-tls-b"));
          return entry && JSON.parse(entry.value).phase === "Running";
        },
        60_000,
      );
      expect(kubelet.output.slice(from)).toMatch(
        /the etcd watch on \/registry\/hosts\/e2e-fleet-tls\/ resumed at revision \d+/,
      );
    });
  },
);
