// --etcd_config files, both shapes, and errors that name the file and the key.
import { expect, test } from "bun:test";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { readEtcdConfig } from "./etcd-config.ts";

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
