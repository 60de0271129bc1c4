// A private dbus-daemon (a system bus on a unix socket in a test's directory, EXTERNAL authentication) with a
// stand-in systemd-logind on it (stand-in-logind.py, python3-dbus), and a forger of its signal from another
// connection, for lib/node/shutdown/dbus.test.ts and test/e2e/node-shutdown.test.ts.
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
  /**
   * Another process, not logind, forges PrepareForShutdown(active) on one connection: broadcast first, then sent to
   * each other connection on the bus (as a real system bus lets any user). Returns the forger's unique name.
   */
  forgePrepareForShutdown(active: boolean): string;
  /** Stops the stand-in logind and starts it again: org.freedesktop.login1 gets a new owner. */
  restartLogind(): Promise<void>;
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

/** A connection that is not logind sending PrepareForShutdown(argv[1]) broadcast, then to every other connection. */
const FORGER = `
import os, sys, dbus
bus = dbus.bus.BusConnection(os.environ["DBUS_SYSTEM_BUS_ADDRESS"])
driver = bus.get_object("org.freedesktop.DBus", "/org/freedesktop/DBus")
logind = driver.GetNameOwner("org.freedesktop.login1", dbus_interface="org.freedesktop.DBus")
others = [n for n in driver.ListNames(dbus_interface="org.freedesktop.DBus") if n.startswith(":") and n not in (logind, bus.get_unique_name())]
for destination in [None] + others:
    signal = dbus.lowlevel.SignalMessage("/org/freedesktop/login1", "org.freedesktop.login1.Manager", "PrepareForShutdown")
    if destination: signal.set_destination(destination)
    signal.append(dbus.Boolean(sys.argv[1] == "true"))
    bus.send_message(signal)
bus.flush()
print(bus.get_unique_name())
`;

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
  const env = { ...process.env, DBUS_SYSTEM_BUS_ADDRESS: address };
  const lines: string[] = [];
  let logind: ChildProcess | undefined;
  const stop = () => [logind, bus].forEach((p) => p?.kill());
  /** Starts the stand-in; resolves once it has said its `readies`th "ready". */
  const startLogind = async (readies: number) => {
    logind = spawn(
      "/usr/bin/python3",
      [join(import.meta.dir, "stand-in-logind.py"), String(delayMaxSeconds * 1_000_000)],
      {
        env,
        stdio: ["ignore", "pipe", "inherit"],
      },
    );
    const ready = (printed: string[]) => printed.filter((l) => l === "ready").length >= readies;
    await untilLine(logind, "the stand-in logind", ready, lines).catch((error) => {
      stop();
      throw error;
    });
  };
  await startLogind(1);
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
    forgePrepareForShutdown(active) {
      const forged = spawnSync("/usr/bin/python3", ["-c", FORGER, String(active)], { env, encoding: "utf8" });
      if (forged.status !== 0) throw new Error(`the forger failed: ${forged.stderr}`);
      return forged.stdout.trim();
    },
    async restartLogind() {
      const old = logind!;
      const gone = new Promise((resolve) => old.once("exit", resolve));
      old.kill();
      await gone;
      await startLogind(lines.filter((l) => l === "ready").length + 1);
    },
    stop,
  };
}
