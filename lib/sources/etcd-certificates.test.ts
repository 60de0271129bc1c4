// The etcd client's certificate files re-read on rotation, and the server identity check's messages.
import { afterAll, expect, test } from "bun:test";
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { PeerCertificate } from "node:tls";
import { createTestCa } from "../testing/certificates.ts";
import { certificateMismatch, watchCertificateFiles } from "./etcd-certificates.ts";

const dir = mkdtempSync(join(tmpdir(), "kubelet-etcd-certificates-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

test("a rotated certificate reaches the listeners at the next read; half a rotation keeps the previous pair", () => {
  const ca = createTestCa(dir, "rotation-ca");
  const [first, second] = [ca.client("first"), ca.client("second")];
  const files = { caFile: ca.caFile, certFile: join(dir, "live.crt"), keyFile: join(dir, "live.key") };
  copyFileSync(first.certFile, files.certFile);
  copyFileSync(first.keyFile, files.keyFile);
  const watch = watchCertificateFiles(files, 60_000);
  try {
    const seen: string[] = [];
    watch.identity!.addIdentityCertificateListener((update) => seen.push(update!.certificate.toString()));
    expect(seen).toEqual([readFileSync(first.certFile, "utf8")]);
    // The certificate is replaced, its key not yet: the pair does not match, so nothing changes.
    copyFileSync(second.certFile, files.certFile);
    watch.reload();
    expect(seen).toHaveLength(1);
    copyFileSync(second.keyFile, files.keyFile);
    watch.reload();
    expect(seen).toEqual([readFileSync(first.certFile, "utf8"), readFileSync(second.certFile, "utf8")]);
    // A CA file that is gone (mid-rename) keeps the CA read before.
    const cas: unknown[] = [];
    watch.provider.addCaCertificateListener((update) => cas.push(update));
    rmSync(files.caFile);
    watch.reload();
    expect(cas).toHaveLength(1);
    expect(cas[0]).not.toBeNull();
  } finally {
    watch.stop();
  }
});

test("the files are read again on the timer", async () => {
  const ca = createTestCa(dir, "timer-ca");
  const files = { caFile: join(dir, "timer-live.crt") };
  copyFileSync(ca.caFile, files.caFile);
  const watch = watchCertificateFiles(files, 10);
  try {
    const changed = new Promise<unknown>((resolve) =>
      watch.provider.addCaCertificateListener(
        (update) => update && !update.caCertificate.equals(readFileSync(ca.caFile)) && resolve(update),
      ),
    );
    copyFileSync(createTestCa(dir, "timer-ca-2").caFile, files.caFile);
    expect(await changed).toBeDefined();
  } finally {
    watch.stop();
  }
});

test("a server certificate is checked against the IP of an IP endpoint and the name of a DNS one", () => {
  const cert = { subject: { CN: "etcd" }, subjectaltname: "IP Address:10.0.0.5, DNS:etcd.example" } as PeerCertificate;
  const endpoints = [
    "https://10.0.0.5:2379",
    "https://etcd.example:2379",
    "https://10.0.0.6:2379",
    "https://other:2379",
  ];
  expect(certificateMismatch("10.0.0.5", cert, endpoints)).toBeUndefined();
  expect(certificateMismatch("etcd.example", cert, endpoints)).toBeUndefined();
  expect(certificateMismatch("10.0.0.6", cert, endpoints)?.message).toBe(
    "etcd endpoint https://10.0.0.6:2379 presents a certificate for IP Address:10.0.0.5, DNS:etcd.example, not for 10.0.0.6: " +
      "address etcd by a name or IP its certificate lists, or give it a certificate with IP:10.0.0.6 in its subjectAltName",
  );
  expect(certificateMismatch("other", cert, endpoints)?.message).toContain(
    "etcd endpoint https://other:2379 presents a certificate for IP Address:10.0.0.5, DNS:etcd.example, not for other",
  );
  // An IP is never matched against a DNS name, nor a name against an IP.
  const dnsOnly = { subject: { CN: "10.0.0.5" }, subjectaltname: "DNS:10.0.0.5" } as PeerCertificate;
  expect(certificateMismatch("10.0.0.5", dnsOnly, endpoints)).toBeDefined();
});
