// etcd's and gRPC's errors as an operator reads them: who was refused, doing what, and the fix.
import { expect, test } from "bun:test";
import { explain, keyList } from "./etcd-errors.ts";

const byPassword = { endpoints: ["https://10.0.0.1:2379"], auth: { username: "node-1", password: "x" } };
const byCertificate = {
  endpoints: ["https://10.0.0.1:2379"],
  tls: { caFile: "ca.crt", certFile: "node.crt", keyFile: "node.key" },
};

test.each([
  [
    "a denied key names the action, the user and the permissions the kubelet needs",
    new Error("etcdserver: permission denied"),
    byPassword,
    {
      code: "PermissionDenied",
      message:
        /^etcd denied writing \/registry\/nodes\/n to user "node-1": permission denied \(the kubelet needs readwrite on the key \/registry\/nodes\/<node> and the prefix \/registry\/hosts\/<node>\//,
    },
  ],
  [
    "a refused login names the user",
    new Error("etcdserver: authentication failed, invalid user ID or password"),
    byPassword,
    {
      code: "Unauthenticated",
      message: /^etcd refused user "node-1" while writing \/registry\/nodes\/n: authentication failed/,
    },
  ],
  [
    "a refused client certificate names the file and the fix",
    new Error(
      "14 UNAVAILABLE: No connection established. Last error: error:10000412:SSL routines:OPENSSL_internal:SSLV3_ALERT_BAD_CERTIFICATE (2026-11-25T20:54:06.662Z). Resolution note: ",
    ),
    byCertificate,
    {
      code: "CertificateRefused",
      message:
        /^etcd \(https:\/\/10\.0\.0\.1:2379\) refused the client certificate node\.crt while writing .*: give a client certificate signed by a CA in etcd's --trusted-ca-file$/,
    },
  ],
  [
    "an unreachable cluster names the endpoints and gRPC's last error, without gRPC's wrapping",
    new Error(
      "14 UNAVAILABLE: No connection established. Last error: Error: connect ECONNREFUSED 10.0.0.1:2379. Resolution note: ",
    ),
    byCertificate,
    {
      code: "Unavailable",
      message:
        /^cannot reach etcd \(https:\/\/10\.0\.0\.1:2379\) while writing \/registry\/nodes\/n: connect ECONNREFUSED 10\.0\.0\.1:2379$/,
    },
  ],
])("%s", (_, error, options, expected) => {
  const explained = explain(error, "writing /registry/nodes/n", options) as Error & { code?: string };
  expect(explained.code).toBe(expected.code);
  expect(explained.message).toMatch(expected.message);
});

test("other errors pass through as they are; long key lists are cut", () => {
  const other = new Error("etcdserver: request timed out");
  expect(explain(other, "reading /x", byPassword)).toBe(other);
  expect(keyList(["/a", "/b"])).toBe("/a, /b");
  expect(keyList(["/a", "/b", "/c", "/d", "/e"])).toBe("/a, /b, /c and 2 more keys");
});
