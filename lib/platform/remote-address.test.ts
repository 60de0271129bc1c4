import { expect, test } from "bun:test";
import { markRemoteAddress, remoteAddress } from "./remote-address.ts";

test("a request's recorded peer address is read back, an IPv4-mapped one in its IPv4 form", () => {
  const a = new Request("http://x/");
  const b = new Request("http://x/");
  const c = new Request("http://x/");
  markRemoteAddress(a, "::ffff:10.0.0.7");
  markRemoteAddress(b, "fe80::1");
  expect(remoteAddress(a)).toBe("10.0.0.7");
  expect(remoteAddress(b)).toBe("fe80::1");
  expect(remoteAddress(c)).toBeUndefined();
});
