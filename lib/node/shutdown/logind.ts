// systemd-logind on the system D-Bus ($DBUS_SYSTEM_BUS_ADDRESS or /run/dbus/system_bus_socket), through our own
// client (lib/node/shutdown/dbus.ts), for graceful node shutdown (loaded only when shutdownGracePeriod > 0): its
// InhibitDelayMaxUSec, its PrepareForShutdown signal, and a delay inhibitor lock. logind hands the
// lock over as a file descriptor, which a JavaScript D-Bus client cannot receive (no SCM_RIGHTS in
// Node or Bun sockets): `systemd-inhibit --mode=delay` holds it for us, in a child that lives until
// we close its stdin (or we die), and ListInhibitors tells when logind has granted it.
import { spawn } from "node:child_process";
import { KubeletError } from "../../api/types.ts";
import type { Logger } from "../../log.ts";
import { connectDbus, systemBusAddress, type Variant } from "./dbus.ts";
import type { Logind } from "./node-shutdown.ts";

const NAME = "org.freedesktop.login1";
const PATH = "/org/freedesktop/login1";
const MANAGER = "org.freedesktop.login1.Manager";
/** The Go kubelet's inhibitor, as `systemd-inhibit --list` shows it. */
const WHO = "kubelet";
const WHY = "Kubelet needs time to handle node shutdown";

/**
 * Connects to logind; throws LogindUnavailable naming the bus when it does not answer. A PrepareForShutdown not
 * sent by logind's own connection (any local user may emit one) is ignored, with a warning on `log`.
 */
export async function connectLogind(options: { log?: Logger } = {}): Promise<Logind> {
  const address = systemBusAddress();
  const unavailable = (error: Error) =>
    new KubeletError(
      "LogindUnavailable",
      `cannot reach systemd-logind on the system D-Bus (${address}): ${error.message}`,
    );
  const bus = await connectDbus(address).catch((error: Error) => {
    throw unavailable(error);
  });
  const manager = { destination: NAME, path: PATH, interface: MANAGER };
  const prepareForShutdown: Array<(active: boolean) => void> = [];
  let delayMaxUsec: bigint;
  try {
    // A first call proves logind is there (a bus without it answers ServiceUnknown).
    const [delay] = (await bus.call({
      ...manager,
      interface: "org.freedesktop.DBus.Properties",
      member: "Get",
      signature: "ss",
      body: [MANAGER, "InhibitDelayMaxUSec"],
    })) as [Variant];
    if (delay.signature !== "t") throw new Error("InhibitDelayMaxUSec from logind is not a uint64 as expected");
    delayMaxUsec = delay.value as bigint;
    await bus.onSignal(
      { interface: MANAGER, member: "PrepareForShutdown", path: PATH, sender: NAME },
      ([active]) => {
        for (const listener of prepareForShutdown) listener(active === true);
      },
      (sender, owner) =>
        options.log?.warn(
          `ignored PrepareForShutdown from ${sender || "an unnamed sender"}, not systemd-logind (${owner || `${NAME} has no owner`})`,
        ),
    );
  } catch (error) {
    bus.close();
    throw unavailable(error as Error);
  }
  const inhibitors = async () =>
    (await bus.call({ ...manager, member: "ListInhibitors" }))[0] as Array<
      [string, string, string, string, number, number]
    >;
  return {
    inhibitDelayMaxMs: Number(delayMaxUsec) / 1000,
    async inhibitShutdown() {
      const child = spawn(
        "systemd-inhibit",
        ["--what=shutdown", `--who=${WHO}`, `--why=${WHY}`, "--mode=delay", "cat"],
        { stdio: ["pipe", "ignore", "pipe"] },
      );
      let stderr = "";
      child.stderr!.on("data", (d) => (stderr += d));
      const exited = new Promise<never>((_, reject) => {
        child.once("error", reject);
        child.once("exit", (code) =>
          reject(new Error(`systemd-inhibit exited (${code}): ${stderr.trim() || "no reason given"}`)),
        );
      });
      exited.catch(() => {});
      const granted = (async () => {
        for (;;) {
          const held = await inhibitors();
          if (
            held.some(
              ([what, who, , mode, , pid]) =>
                what.includes("shutdown") && who === WHO && mode === "delay" && pid === child.pid,
            )
          )
            return;
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
      })();
      await Promise.race([granted, exited]).catch((error: Error) => {
        child.kill();
        throw new KubeletError("InhibitFailed", `cannot take a delay inhibitor lock on shutdown: ${error.message}`);
      });
      return async () => {
        if (child.exitCode !== null) return;
        const gone = new Promise((resolve) => child.once("exit", resolve));
        child.stdin!.end(); // cat exits, systemd-inhibit closes the lock
        await gone;
      };
    },
    onPrepareForShutdown(listener) {
      prepareForShutdown.push(listener);
    },
    close: () => bus.close(),
  };
}
