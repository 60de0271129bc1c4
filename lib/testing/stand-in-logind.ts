// A private dbus-daemon (a system bus on a unix socket in a test's directory, EXTERNAL authentication) with a
// stand-in systemd-logind on it (stand-in-logind.py, python3-dbus), for lib/node/shutdown/dbus.test.ts and
// test/e2e/node-shutdown.test.ts.
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";

export interface StandInLogind {
  /** The bus's address, unix:path=<dir>/bus. */
  address: string;
  /** What the stand-in reported, one event a line: "ready", "inhibit …", "release …", "prepare-for-shutdown …". */
  lines: string[];
  /** org.kubelet.test.Control.Shutdown through dbus-send: the stand-in emits PrepareForShutdown(active). */
  prepareForShutdown(active: boolean): void;
  stop(): void;
}

/** Resolves once `child` has written a line that `done` accepts; rejects if it exits first or takes 10 s. */
function untilLine(child: ChildProcess, what: string, done: (lines: string[]) => boolean, lines: string[] = []) {
  return new Promise<void>((resolve, reject) => {
    const fail = (message: string) => {
      clearTimeout(timer);
      reject(new Error(message));
    };
    const timer = setTimeout(() => fail(`${what} did not start within 10s`), 10_000);
    child.stdout!.on("data", (d) => {
      lines.push(...String(d).trim().split("\n"));
      if (done(lines)) resolve(clearTimeout(timer));
    });
    child.once("error", (error) => fail(`${what} did not start: ${error.message}`));
    child.once("exit", (code) => fail(`${what} exited (${code}) before it was ready`));
  });
}

/** Starts a bus in `dir` and a stand-in logind whose InhibitDelayMaxUSec is `delayMaxSeconds`. */
export async function startStandInLogind(dir: string, delayMaxSeconds: number): Promise<StandInLogind> {
  const address = `unix:path=${join(dir, "bus")}`;
  writeFileSync(
    join(dir, "bus.conf"),
    `<busconfig><type>system</type><listen>${address}</listen><auth>EXTERNAL</auth>
  <policy context="default"><allow send_destination="*" eavesdrop="true"/><allow eavesdrop="true"/><allow own="*"/><allow user="*"/></policy></busconfig>`,
  );
  // --print-address: the bus writes its address once it listens. (Its stderr only says it cannot raise its fd limit.)
  const bus = spawn("dbus-daemon", ["--config-file", join(dir, "bus.conf"), "--nofork", "--print-address"], {
    stdio: ["ignore", "pipe", "ignore"],
  });
  await untilLine(bus, "dbus-daemon", (printed) => printed.length > 0).catch((error) => {
    bus.kill();
    throw error;
  });
  const logind = spawn(
    "/usr/bin/python3",
    [join(import.meta.dir, "stand-in-logind.py"), String(delayMaxSeconds * 1_000_000)],
    { env: { ...process.env, DBUS_SYSTEM_BUS_ADDRESS: address }, stdio: ["ignore", "pipe", "inherit"] },
  );
  const lines: string[] = [];
  const stop = () => [logind, bus].forEach((p: ChildProcess) => p.kill());
  await untilLine(logind, "the stand-in logind", (printed) => printed.includes("ready"), lines).catch((error) => {
    stop();
    throw error;
  });
  return {
    address,
    lines,
    prepareForShutdown(active) {
      const sent = spawnSync("dbus-send", [
        `--bus=${address}`,
        "--print-reply",
        "--dest=org.freedesktop.login1",
        "/org/freedesktop/login1",
        "org.kubelet.test.Control.Shutdown",
        `boolean:${active}`,
      ]);
      if (sent.status !== 0) throw new Error(`dbus-send: ${sent.stderr}`);
    },
    stop,
  };
}
