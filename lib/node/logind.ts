// The only dbus-next import (loaded only when shutdownGracePeriod > 0): systemd-logind on the system
// D-Bus ($DBUS_SYSTEM_BUS_ADDRESS or /run/dbus/system_bus_socket) for graceful node shutdown — its
// InhibitDelayMaxUSec, its PrepareForShutdown signal, and a delay inhibitor lock. logind hands the
// lock over as a file descriptor, which a JavaScript D-Bus client cannot receive (no SCM_RIGHTS in
// Node or Bun sockets): `systemd-inhibit --mode=delay` holds it for us, in a child that lives until
// we close its stdin (or we die), and ListInhibitors tells when logind has granted it.
import { spawn } from "node:child_process";
import dbus from "dbus-next";
import { KubeletError } from "../api/types.ts";
import type { Logind } from "./node-shutdown.ts";

const NAME = "org.freedesktop.login1";
const PATH = "/org/freedesktop/login1";
const MANAGER = "org.freedesktop.login1.Manager";
/** What the kubelet uses of logind's introspection data (given, so no Introspect round trip). */
const XML = `<node>
  <interface name="${MANAGER}">
    <method name="ListInhibitors"><arg type="a(ssssuu)" direction="out"/></method>
    <signal name="PrepareForShutdown"><arg type="b"/></signal>
  </interface>
  <interface name="org.freedesktop.DBus.Properties">
    <method name="Get"><arg type="s" direction="in"/><arg type="s" direction="in"/><arg type="v" direction="out"/></method>
  </interface>
</node>`;
/** The Go kubelet's inhibitor, as `systemd-inhibit --list` shows it. */
const WHO = "kubelet";
const WHY = "Kubelet needs time to handle node shutdown";

/** Connects to logind; throws LogindUnavailable naming the bus when it does not answer. */
export async function connectLogind(): Promise<Logind> {
  const address = process.env.DBUS_SYSTEM_BUS_ADDRESS || "unix:path=/run/dbus/system_bus_socket";
  const bus = dbus.systemBus();
  // dbus-next reports a bus it cannot reach as an 'error' event; without a listener it would throw unhandled.
  const failed = new Promise<never>((_, reject) => bus.once("error", reject));
  failed.catch(() => {});
  const unavailable = (error: Error) =>
    new KubeletError(
      "LogindUnavailable",
      `cannot reach systemd-logind on the system D-Bus (${address}): ${error.message}`,
    );
  const object = await Promise.race([bus.getProxyObject(NAME, PATH, XML), failed]).catch((error: Error) => {
    bus.disconnect();
    throw unavailable(error);
  });
  const manager = object.getInterface(MANAGER);
  const properties = object.getInterface("org.freedesktop.DBus.Properties");
  const inhibitors = async (): Promise<Array<[string, string, string, string, number, number]>> =>
    manager.ListInhibitors();
  // A first call proves logind is there (a bus without it answers ServiceUnknown).
  const delayMaxUsec = await Promise.race([properties.Get(MANAGER, "InhibitDelayMaxUSec"), failed]).catch(
    (error: Error) => {
      bus.disconnect();
      throw unavailable(error);
    },
  );
  return {
    inhibitDelayMaxMs: Number(delayMaxUsec.value) / 1000,
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
      manager.on("PrepareForShutdown", (active: boolean) => listener(active));
    },
    close: () => bus.disconnect(),
  };
}
