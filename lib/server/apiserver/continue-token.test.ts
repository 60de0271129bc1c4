import { describe, expect, test } from "bun:test";
import { decodeContinue, encodeContinue } from "./continue-token.ts";

const b64 = (text: string) => Buffer.from(text).toString("base64url");

describe("continue tokens", () => {
  test("a token is base64url, unpadded, of upstream's JSON with the key after the prefix", () => {
    const token = encodeContinue("/registry/pods/default/web\u0000", "/registry/pods/", 5);
    expect(token).toBe(b64('{"v":"meta.k8s.io/v1","rv":5,"start":"default/web\\u0000"}'));
    expect(token).not.toContain("=");
    expect(decodeContinue(token, "/registry/pods/")).toEqual({ fromKey: "/registry/pods/default/web\u0000", rv: 5 });
    // A key whose standard base64 has "+" and "=" (Go's RawURLEncoding writes "-" and no padding), pinned literally.
    expect(encodeContinue("/registry/pods/default/web-~~~\u0000", "/registry/pods/", 5)).toBe(
      "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6NSwic3RhcnQiOiJkZWZhdWx0L3dlYi1-fn5cdTAwMDAifQ",
    );
  });

  test("a token encoded for one namespace resumes under that namespace's prefix", () => {
    const token = encodeContinue("/registry/pods/kube-system/dns\u0000", "/registry/pods/kube-system/", 9);
    expect(decodeContinue(token, "/registry/pods/kube-system/").fromKey).toBe("/registry/pods/kube-system/dns\u0000");
  });

  test("the inconsistent-remainder token's revision -1 is accepted", () => {
    const token = encodeContinue("/registry/pods/a/b\u0000", "/registry/pods/", -1);
    expect(decodeContinue(token, "/registry/pods/").rv).toBe(-1);
  });

  test("a key outside the prefix cannot be encoded", () => {
    expect(() => encodeContinue("/registry/nodes/a", "/registry/pods/", 1)).toThrow(
      "unable to encode next field: the key and key prefix do not match /registry/pods/ /registry/nodes/a",
    );
  });

  const refused: Array<[string, string, string]> = [
    ["not base64url", "e30=", "continue key is not valid: illegal base64 data at input byte 3"],
    ["not JSON", b64("nope"), "continue key is not valid: "],
    [
      "another version",
      b64('{"v":"meta.k8s.io/v2","rv":1,"start":"a"}'),
      "server does not recognize this encoded version meta.k8s.io/v2",
    ],
    [
      "no revision",
      b64('{"v":"meta.k8s.io/v1","start":"a"}'),
      "continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)",
    ],
    [
      "no start key",
      b64('{"v":"meta.k8s.io/v1","rv":3,"start":""}'),
      "continue key is not valid: encoded start key empty (version meta.k8s.io/v1)",
    ],
    [
      "a start key climbing out of the prefix",
      b64('{"v":"meta.k8s.io/v1","rv":3,"start":"../secrets/x"}'),
      "continue key is not valid: ../secrets/x",
    ],
  ];
  for (const [what, token, message] of refused)
    test(`a token with ${what} is refused in upstream's words`, () => {
      expect(() => decodeContinue(token, "/registry/pods/")).toThrow(message);
    });
});

test("a token written as Go's json.Marshal and RawURLEncoding write it decodes here", () => {
  // Built by hand from continue.go's struct (Go escapes NUL as \u0000), not taken from a live kube-apiserver.
  const upstream = "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MTIzNDUsInN0YXJ0Ijoia3ViZS1zeXN0ZW0vY29yZWRucy0xXHUwMDAwIn0";
  expect(decodeContinue(upstream, "/registry/pods/")).toEqual({
    fromKey: "/registry/pods/kube-system/coredns-1\u0000",
    rv: 12345,
  });
});
