// Go's words for probe network failures, by the error codes Bun and Node give (the loopback cases run for real
// in probes.test.ts; name lookups cannot, without DNS traffic).
import { expect, test } from "bun:test";
import { dialError, httpGetError, joinHostPort, tcpDialError } from "./dial-error.ts";

const failed = (code: string, message = `${code}: something`) => Object.assign(new Error(message), { code });

test("each connect and lookup failure reads as Go's net.Dial error", () => {
  expect(
    [
      "ECONNREFUSED",
      "EHOSTUNREACH",
      "ENETUNREACH",
      "ETIMEDOUT",
      "ENOTFOUND",
      "DNS_ENOTFOUND",
      "EAI_AGAIN",
      "EPERM",
    ].map((code) => dialError(failed(code), "10.0.0.7", 8080)),
  ).toEqual([
    "dial tcp 10.0.0.7:8080: connect: connection refused",
    "dial tcp 10.0.0.7:8080: connect: no route to host",
    "dial tcp 10.0.0.7:8080: connect: network is unreachable",
    "dial tcp 10.0.0.7:8080: i/o timeout",
    "dial tcp: lookup 10.0.0.7: no such host",
    "dial tcp: lookup 10.0.0.7: no such host",
    "dial tcp: lookup 10.0.0.7: Temporary failure in name resolution",
    undefined,
  ]);
});

test("an HTTP probe's failure is Go's `Get \"<url>\": …`, a timeout as http.Client's and a closed connection as EOF", () => {
  const url = "http://web.internal:8080/healthz";
  expect(httpGetError(failed("ENOTFOUND"), url, "web.internal", 8080)).toBe(
    'Get "http://web.internal:8080/healthz": dial tcp: lookup web.internal: no such host',
  );
  expect(httpGetError(new DOMException("The operation timed out.", "TimeoutError"), url, "web.internal", 8080)).toBe(
    'Get "http://web.internal:8080/healthz": context deadline exceeded (Client.Timeout exceeded while awaiting headers)',
  );
  expect(httpGetError(failed("ECONNRESET"), url, "web.internal", 8080)).toBe(
    'Get "http://web.internal:8080/healthz": EOF',
  );
  expect(httpGetError(new Error("certificate has expired"), url, "web.internal", 8080)).toBe(
    'Get "http://web.internal:8080/healthz": certificate has expired',
  );
});

test("a TCP probe's failure names the address as Go joins it, an IPv6 one in brackets", () => {
  expect(joinHostPort("::1", 80)).toBe("[::1]:80");
  expect(tcpDialError(failed("ECONNREFUSED"), "::1", 80)).toBe("dial tcp [::1]:80: connect: connection refused");
  expect(tcpDialError(new Error("socket hang up"), "::1", 80)).toBe("dial tcp [::1]:80: socket hang up");
});
