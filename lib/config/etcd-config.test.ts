// --etcd_config files, both shapes, and errors that name the file and the key; kubelet fleet's etcdctl variables.
import { describe, expect, test } from "bun:test";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createTestCa } from "../testing/certificates.ts";
import { fleetEtcdSettings, readEtcdConfig } from "./etcd-config.ts";

test("reads the 2014 go-etcd config file and the plain one, naming the file in errors", () => {
  const dir = mkdtempSync(join(tmpdir(), "kubelet-etcd-config-"));
  writeFileSync(
    join(dir, "legacy.json"),
    JSON.stringify({ cluster: { machines: ["http://127.0.0.1:4001"] }, config: { timeout: 2_000_000_000 } }),
  );
  writeFileSync(
    join(dir, "plain.yaml"),
    "endpoints: [http://127.0.0.1:2379, http://127.0.0.2:2379]\ndialTimeout: 3s\nusername: kubelet\npassword: s3cret\n",
  );
  writeFileSync(join(dir, "bad.yaml"), "endpoint: http://127.0.0.1:2379\n");
  expect(readEtcdConfig(join(dir, "legacy.json"))).toMatchObject({
    endpoints: ["http://127.0.0.1:4001"],
    dialTimeoutMs: 2000,
  });
  expect(readEtcdConfig(join(dir, "plain.yaml"))).toMatchObject({
    endpoints: ["http://127.0.0.1:2379", "http://127.0.0.2:2379"],
    dialTimeoutMs: 3000,
    auth: { username: "kubelet", password: "s3cret" },
  });
  expect(() => readEtcdConfig(join(dir, "bad.yaml"))).toThrow(/bad\.yaml.*endpoints/);
});

describe("certificate files", () => {
  const dir = mkdtempSync(join(tmpdir(), "kubelet-etcd-tls-config-"));
  const ca = createTestCa(dir, "config-ca");
  const client = ca.client("kubelet");
  const config = (name: string, settings: object) => {
    writeFileSync(join(dir, name), JSON.stringify({ endpoints: ["https://127.0.0.1:2379"], ...settings }));
    return join(dir, name);
  };

  test("are checked at start, each error naming the file, the setting and the fix", () => {
    expect(readEtcdConfig(config("ok.json", { caFile: ca.caFile, ...client })).tls).toEqual({
      caFile: ca.caFile,
      ...client,
    });
    expect(() => readEtcdConfig(config("half.json", { caFile: ca.caFile, certFile: client.certFile }))).toThrow(
      /half\.json": certFile and keyFile go together: give both or neither/,
    );
    expect(() => readEtcdConfig(config("noca.json", client))).toThrow(
      /noca\.json": certFile needs caFile, the CA that signed etcd's certificate/,
    );
    expect(() => readEtcdConfig(config("swapped.json", { caFile: client.keyFile }))).toThrow(
      new RegExp(`swapped\\.json": caFile "${client.keyFile}": not a PEM certificate`),
    );
    expect(() =>
      readEtcdConfig(
        config("missing.json", { caFile: ca.caFile, certFile: join(dir, "gone.crt"), keyFile: client.keyFile }),
      ),
    ).toThrow(/missing\.json": certFile ".*gone\.crt": ENOENT/);
  });

  test("kubelet fleet takes etcdctl's variables below its flags", () => {
    const env = {
      ETCDCTL_ENDPOINTS: "https://10.0.0.1:2379, https://10.0.0.2:2379",
      ETCDCTL_CACERT: ca.caFile,
      ETCDCTL_CERT: client.certFile,
      ETCDCTL_KEY: client.keyFile,
      ETCDCTL_USER: "ops:pa:ss",
    };
    expect(fleetEtcdSettings({ etcdServers: [] }, env)).toEqual({
      endpoints: ["https://10.0.0.1:2379", "https://10.0.0.2:2379"],
      dialTimeoutMs: 5000,
      tls: { caFile: ca.caFile, ...client },
      auth: { username: "ops", password: "pa:ss" },
    });
    expect(fleetEtcdSettings({ etcdServers: ["https://10.0.0.9:2379"] }, env)?.endpoints).toEqual([
      "https://10.0.0.9:2379",
    ]);
    expect(fleetEtcdSettings({ etcdServers: [], etcdConfig: config("flag.json", {}) }, env)).toEqual({
      endpoints: ["https://127.0.0.1:2379"],
      dialTimeoutMs: 5000,
    });
    expect(fleetEtcdSettings({ etcdServers: [] }, { ETCDCTL_USER: "ops", ETCDCTL_PASSWORD: "x" })).toBeUndefined();
    expect(
      fleetEtcdSettings({ etcdServers: ["http://e:2379"] }, { ETCDCTL_USER: "ops", ETCDCTL_PASSWORD: "x" })?.auth,
    ).toEqual({ username: "ops", password: "x" });
    expect(() => fleetEtcdSettings({ etcdServers: [] }, { ...env, ETCDCTL_KEY: undefined })).toThrow(
      "ETCDCTL_CERT and ETCDCTL_KEY go together: give both or neither",
    );
  });
});
