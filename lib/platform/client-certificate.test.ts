import { expect, test } from "bun:test";
import {
  clientCertificateSubject,
  hasClientCertificate,
  markClientCertificate,
  peerSubject,
} from "./client-certificate.ts";

test("a marked request has a verified certificate and its subject; an unmarked one has neither", () => {
  const marked = new Request("https://x/");
  markClientCertificate(marked, { CN: "ops", O: ["a", "b"] });
  expect([hasClientCertificate(marked), clientCertificateSubject(marked)]).toEqual([
    true,
    { CN: "ops", O: ["a", "b"] },
  ]);
  const plain = new Request("https://x/");
  expect([hasClientCertificate(plain), clientCertificateSubject(plain)]).toEqual([false, undefined]);
});

test("the peer subject is node:tls's, or empty on a socket without getPeerCertificate (Bun's node:https)", () => {
  expect(peerSubject({ getPeerCertificate: () => ({ subject: { CN: "me", O: "g" } }) })).toEqual({ CN: "me", O: "g" });
  expect(peerSubject({})).toEqual({});
});
