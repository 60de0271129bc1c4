import { expect, test } from "bun:test";
import { parseTokenFile } from "./token-file.ts";

test("a kube-apiserver token line gives the user, the uid and the quoted groups plus system:authenticated", () => {
  expect(parseTokenFile('s3cret,alice,1001,"ops,system:masters"\n', "t")).toEqual([
    {
      token: "s3cret",
      user: { name: "alice", uid: "1001", groups: ["ops", "system:masters", "system:authenticated"] },
    },
  ]);
});

test("a bare token is user kubelet-token-<line> in group system:authenticated", () => {
  expect(parseTokenFile("# scrape\n\nabc\n", "t")).toEqual([
    { token: "abc", user: { name: "kubelet-token-3", groups: ["system:authenticated"] } },
  ]);
});

test("a line without groups or uid is accepted as kube-apiserver accepts it", () => {
  expect(parseTokenFile("tok,bob,", "t")[0]!.user).toEqual({ name: "bob", groups: ["system:authenticated"] });
});

test("two columns, an empty token, a repeated token and an open quote are refused with the file and line", () => {
  expect(() => parseTokenFile("tok,bob", "/etc/t")).toThrow(/"\/etc\/t" line 1: expected token,user,uid/);
  expect(() => parseTokenFile(",bob,1", "t")).toThrow(/line 1: the token \(first column\) is empty/);
  expect(() => parseTokenFile("a\na", "t")).toThrow(/line 2: the same token/);
  expect(() => parseTokenFile('a,b,c,"g1', "t")).toThrow(/unterminated quote/);
});
