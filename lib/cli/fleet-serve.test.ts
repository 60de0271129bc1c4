import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fleetKeys } from "../node/status/fleet-reporter.ts";
import type { EtcdClient } from "../sources/etcd-client.ts";
import { createTestCa } from "../testing/certificates.ts";
import { FakeEtcd } from "../testing/fake-etcd.ts";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { fleetServeSettings } from "./fleet-serve-flags.ts";
import { type FleetServer, startFleetServer } from "./fleet-serve.ts";

describe("kubelet fleet serve", () => {
  const dir = mkdtempSync(join(tmpdir(), "fleet-serve-unit-"));
  const etcd = new FakeEtcd();
  let server: FleetServer;
  let ca: string;
  const get = (path: string, token?: string) =>
    fetch(`https://127.0.0.1:${server.port}${path}`, {
      headers: token ? { authorization: `Bearer ${token}` } : {},
      tls: { ca },
    } as RequestInit);

  beforeAll(async () => {
    const testCa = createTestCa(dir, "ca");
    ca = readFileSync(testCa.caFile, "utf8");
    const serving = testCa.server("fleet", { ips: ["127.0.0.1"] });
    const tokens = join(dir, "tokens.csv");
    writeFileSync(tokens, 'admin-token,admin,admin,"system:masters"\nnobody-token,nobody,nobody\n');
    const policy = join(dir, "policy.yaml");
    writeFileSync(policy, readFileSync(join(import.meta.dir, "../../testdata/rbac/pod-reader.yaml"), "utf8"));
    await etcd.apply([
      { key: fleetKeys.node("a"), value: JSON.stringify({ metadata: { name: "a" } }) },
      { key: fleetKeys.status("a", "default", "web"), value: JSON.stringify({ phase: "Running" }) },
    ]);
    const settings = fleetServeSettings(
      {
        tlsCertFile: serving.certFile,
        tlsPrivateKeyFile: serving.keyFile,
        tokenAuthFile: tokens,
        authorizationPolicyFile: policy,
        securePort: "0",
      },
      (message) => new Error(message),
    );
    server = await startFleetServer(etcd as unknown as EtcdClient, settings);
  });
  afterAll(async () => {
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test("serves the fleet's pods over TLS to an authenticated, authorized caller", async () => {
    const response = await get("/api/v1/pods", "admin-token");
    expect(response.status).toBe(200);
    const list = await response.json();
    expect(
      list.items.map((p: { metadata: { name: string }; spec: { nodeName: string } }) => [
        p.metadata.name,
        p.spec.nodeName,
      ]),
    ).toEqual([["web", "a"]]);
    expect(list.metadata.resourceVersion).toBe(String(etcd.revision));
  });

  test("a request without credentials is 401, and one RBAC does not allow is 403 as kube-apiserver words it", async () => {
    expect((await get("/api/v1/pods")).status).toBe(401);
    const refused = await get("/api/v1/nodes", "nobody-token");
    expect(refused.status).toBe(403);
    expect((await refused.json()).message).toBe(
      'nodes is forbidden: User "nobody" cannot list resource "nodes" in API group "" at the cluster scope',
    );
  });

  test("discovery lists pods, nodes and events (list and watch: kubectl get events needs it)", async () => {
    const resources = await (await get("/api/v1", "admin-token")).json();
    const names = resources.resources.map((r: { name: string }) => r.name);
    expect(names).toContain("pods");
    expect(names).toContain("nodes");
    const events = resources.resources.find((r: { name: string }) => r.name === "events");
    expect(events?.verbs).toEqual(["list", "watch"]);
  });
});
