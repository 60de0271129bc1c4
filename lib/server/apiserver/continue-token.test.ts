import { expect, test } from "bun:test";
import { decodeContinue, encodeContinue } from "./continue-token.ts";

const b64 = (text: string) => Buffer.from(text).toString("base64url");

test("a token is unpadded base64url of upstream's {v, rv, start} JSON, in that field order", () => {
  const token = encodeContinue("default/web\u0000", 42);
  expect(token).not.toContain("=");
  expect(Buffer.from(token, "base64url").toString()).toBe(
    '{"v":"meta.k8s.io/v1","rv":42,"start":"default/web\\u0000"}',
  );
});

test("a token decodes to the start key and revision it was encoded with", () => {
  expect(decodeContinue(encodeContinue("kube-system/a\u0000", 7))).toEqual({
    start: "kube-system/a\u0000",
    revision: 7,
  });
  expect(decodeContinue(encodeContinue("a\u0000", -1))).toEqual({ start: "a\u0000", revision: -1 });
});

test("a token written as Go's json.Marshal and RawURLEncoding write it decodes here", () => {
  // Built by hand from continue.go's struct (Go escapes NUL as \u0000), not taken from a live kube-apiserver.
  const upstream = "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MTIzNDUsInN0YXJ0Ijoia3ViZS1zeXN0ZW0vY29yZWRucy0xXHUwMDAwIn0";
  expect(decodeContinue(upstream)).toEqual({ start: "kube-system/coredns-1\u0000", revision: 12345 });
});

test.each([
  ["not base64", "a b", "continue key is not valid: illegal base64 data at input byte 1"],
  ["padded base64", `${b64('{"v":"x"}')}=`, "continue key is not valid: illegal base64 data at input byte 12"],
  ["not JSON", b64("nope"), "continue key is not valid: "],
  [
    "another version",
    b64('{"v":"meta.k8s.io/v2","rv":1,"start":"a"}'),
    "continue key is not valid: server does not recognize this encoded version meta.k8s.io/v2",
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
    "a start key leaving the prefix",
    b64('{"v":"meta.k8s.io/v1","rv":3,"start":"../secrets/x"}'),
    "continue key is not valid: ../secrets/x",
  ],
])("%s is refused in DecodeContinue's words", (_, token, message) => {
  let error: Error | undefined;
  try {
    decodeContinue(token);
  } catch (e) {
    error = e as Error;
  }
  expect((error as { code?: string } | undefined)?.code).toBe("InvalidContinue");
  expect(error!.message.startsWith(message)).toBe(true);
});
