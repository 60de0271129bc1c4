import { describe, expect, test } from "bun:test";
import type { Logger } from "../log.ts";
import { FakeClock } from "../testing/fake-clock.ts";
import { selfSignedCertificate } from "./self-signed.ts";
import { createServingCertificate } from "./serving-cert.ts";

const DAY = 24 * 3600 * 1000;

function recordingLog(lines: string[]): Logger {
  const log: Logger = {
    debug: () => {},
    info: (m) => void lines.push(`info ${m}`),
    warn: (m) => void lines.push(`warn ${m}`),
    error: (m) => void lines.push(`error ${m}`),
    child: () => log,
  };
  return log;
}

/** A watcher over an in-memory cert and key, starting from `initial`, made `ageDays` before the clock's now. */
function setup(ageDays: number) {
  const clock = new FakeClock();
  const initial = selfSignedCertificate("node-a", new Date(clock.now() - ageDays * DAY));
  const files: Record<string, string> = { "/pki/tls.crt": initial.cert, "/pki/tls.key": initial.key };
  const lines: string[] = [];
  const served: string[] = [];
  const watcher = createServingCertificate(
    {
      certFile: "/pki/tls.crt",
      keyFile: "/pki/tls.key",
      log: recordingLog(lines),
      onChange: (p) => void served.push(p.cert),
    },
    initial,
    {
      clock,
      read: async (path) => {
        if (files[path] === undefined) throw new Error(`ENOENT: no such file, open '${path}'`);
        return files[path];
      },
    },
  );
  return { clock, files, lines, served, watcher };
}

describe("createServingCertificate", () => {
  test("a renewed pair on disk is handed to the servers once, and the renewal is logged", async () => {
    const { clock, files, served, lines, watcher } = setup(0);
    const renewed = selfSignedCertificate("node-a", new Date(clock.now()));
    files["/pki/tls.crt"] = renewed.cert;
    files["/pki/tls.key"] = renewed.key;
    await watcher.checkOnce();
    await watcher.checkOnce();
    expect(served).toEqual([renewed.cert]);
    expect(lines).toEqual([
      expect.stringMatching(/^info serving the renewed certificate \/pki\/tls.crt \(valid until 2027-01-01/),
    ]);
  });

  test("a renewal caught between its two writes is not served until the key matches, and warned about once", async () => {
    const { clock, files, served, lines, watcher } = setup(0);
    const renewed = selfSignedCertificate("node-a", new Date(clock.now()));
    files["/pki/tls.crt"] = renewed.cert;
    await watcher.checkOnce();
    await watcher.checkOnce();
    expect(served).toEqual([]);
    expect(lines).toEqual([
      "warn not serving the changed /pki/tls.crt: the key does not match the certificate; still serving the previous pair",
    ]);
    files["/pki/tls.key"] = renewed.key;
    await watcher.checkOnce();
    expect(served).toEqual([renewed.cert]);
  });

  test("a certificate expiring within 30 days is shown for healthz and logged once a day", async () => {
    const { clock, lines, watcher } = setup(365 - 12);
    expect(watcher.warnings()).toEqual([
      expect.stringMatching(
        /^serving certificate \/pki\/tls.crt expires at 2026-01-13T00:00:00.000Z, in 12 day\(s\): renew it/,
      ),
    ]);
    await watcher.checkOnce();
    await clock.advance(DAY - 1);
    await watcher.checkOnce();
    expect(lines.length).toBe(1);
    await clock.advance(1);
    await watcher.checkOnce();
    expect(lines).toEqual([expect.stringMatching(/in 12 day/), expect.stringMatching(/in 11 day/)]);
  });

  test("an expired certificate is shown as expired; one with more than 30 days left shows nothing", async () => {
    expect(setup(366).watcher.warnings()).toEqual([
      expect.stringMatching(/^serving certificate \/pki\/tls.crt expired at 2025-12-31T00:00:00.000Z/),
    ]);
    const fresh = setup(365 - 31);
    await fresh.watcher.checkOnce();
    expect(fresh.watcher.warnings()).toEqual([]);
    expect(fresh.lines).toEqual([]);
  });

  test("run reads the files every interval and a read failure is a warning, not the end", async () => {
    const { clock, files, served, lines, watcher } = setup(0);
    const stop = new AbortController();
    delete files["/pki/tls.key"];
    const running = watcher.run(stop.signal);
    await clock.advance(0);
    expect(lines).toEqual([expect.stringMatching(/^warn cannot read the serving certificate or key/)]);
    const renewed = selfSignedCertificate("node-a", new Date(clock.now()));
    files["/pki/tls.crt"] = renewed.cert;
    files["/pki/tls.key"] = renewed.key;
    await clock.advance(5000);
    expect(served).toEqual([renewed.cert]);
    stop.abort();
    await running;
  });
});
