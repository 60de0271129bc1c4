import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type StandInLogind, startStandInLogind } from "../../testing/stand-in-logind.ts";
import { connectDbus, type DbusConnection, type DbusValue, socketPath } from "./dbus.ts";

const LOGIND = { destination: "org.freedesktop.login1", path: "/org/freedesktop/login1" };
const BUS = { destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus" };
const MANAGER = "org.freedesktop.login1.Manager";
const CONTROL = { ...LOGIND, interface: "org.kubelet.test.Control", member: "Shutdown", signature: "b" };
const GET = { ...LOGIND, interface: "org.freedesktop.DBus.Properties", member: "Get", signature: "ss" };

describe("the D-Bus client on a real dbus-daemon", () => {
  const dir = mkdtempSync(join(tmpdir(), "kubelet-dbus-"));
  let logind: StandInLogind;
  let bus: DbusConnection;

  beforeAll(async () => {
    logind = await startStandInLogind(dir, 7);
    bus = await connectDbus(logind.address);
  });
  afterAll(() => {
    bus?.close();
    logind?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test("a method call resolves to its reply's body", async () => {
    expect(await bus.call({ ...GET, body: ["org.freedesktop.login1.Manager", "InhibitDelayMaxUSec"] })).toEqual([
      { signature: "t", value: 7_000_000n },
    ]);
    expect(
      await bus.call({ ...LOGIND, interface: "org.freedesktop.login1.Manager", member: "ListInhibitors" }),
    ).toEqual([[]]);
  });

  test("calls in flight together each get their own reply, whichever answers first", async () => {
    // The bus answers GetId itself, before the stand-in logind has answered the call sent ahead of it.
    const [delay, id, missing] = await Promise.allSettled([
      bus.call({ ...GET, body: ["org.freedesktop.login1.Manager", "InhibitDelayMaxUSec"] }),
      bus.call({ ...BUS, member: "GetId" }),
      bus.call({ ...GET, body: ["org.freedesktop.login1.Manager", "NoSuchProperty"] }),
    ]);
    expect(delay).toEqual({ status: "fulfilled", value: [{ signature: "t", value: 7_000_000n }] });
    expect(id).toEqual({ status: "fulfilled", value: [expect.stringMatching(/^[0-9a-f]{32}$/)] });
    expect(missing).toMatchObject({
      status: "rejected",
      reason: { dbusName: "org.freedesktop.DBus.Error.UnknownProperty" },
    });
  });

  test("an ERROR reply rejects with its D-Bus error name and message", async () => {
    const missing = bus.call({ ...GET, destination: "org.kubelet.NoSuchService", body: ["a", "b"] });
    await expect(missing).rejects.toMatchObject({
      code: "DbusError",
      dbusName: "org.freedesktop.DBus.Error.ServiceUnknown",
      message: expect.stringMatching(
        /^org\.freedesktop\.DBus\.Properties\.Get on org\.kubelet\.NoSuchService: org\.freedesktop\.DBus\.Error\.ServiceUnknown: .*org\.kubelet\.NoSuchService/,
      ),
    });
    await expect(bus.call({ ...GET, body: ["org.freedesktop.login1.Manager", "Nope"] })).rejects.toMatchObject({
      dbusName: "org.freedesktop.DBus.Error.UnknownProperty",
      message: expect.stringContaining("no property org.freedesktop.login1.Manager.Nope"),
    });
  });

  test("a signal is handed to its listener after AddMatch, others are not", async () => {
    const seen: DbusValue[][] = [];
    const other: DbusValue[][] = [];
    await bus.onSignal({ interface: "org.freedesktop.login1.Manager", member: "PrepareForShutdown" }, (body) =>
      seen.push(body),
    );
    await bus.onSignal({ interface: "org.freedesktop.login1.Manager", member: "PrepareForSleep" }, (body) =>
      other.push(body),
    );
    const control = { ...LOGIND, interface: "org.kubelet.test.Control", member: "Shutdown", signature: "b" };
    await bus.call({ ...control, body: [true] });
    await bus.call({ ...control, body: [false] });
    // The bus delivers the signal before the reply of the call that emitted it.
    expect(seen).toEqual([[true], [false]]);
    expect(other).toEqual([]);
  });

  test("a signal matched by sender is taken only from that name's owner: one forged by another process is dropped and reported", async () => {
    const watcher = await connectDbus(logind.address);
    const seen: DbusValue[][] = [];
    const ignored: string[] = [];
    let arrived = () => {};
    const first = new Promise<void>((resolve) => (arrived = resolve));
    await watcher.onSignal(
      { interface: MANAGER, member: "PrepareForShutdown", path: LOGIND.path, sender: LOGIND.destination },
      (body) => {
        seen.push(body);
        arrived();
      },
      (sender, owner) => {
        ignored.push(`${sender} is not ${owner}`);
        arrived();
      },
    );
    const owner = (
      await watcher.call({ ...BUS, member: "GetNameOwner", signature: "s", body: [LOGIND.destination] })
    )[0];
    // One connection sends the broadcast, then the one addressed to us: when the latter is in, so is the former.
    const forger = logind.forgePrepareForShutdown(true);
    await first;
    expect(ignored).toEqual([`${forger} is not ${owner}`]);
    expect(seen).toEqual([]);
    await watcher.call({ ...CONTROL, body: [true] });
    expect(seen).toEqual([[true]]);
    watcher.close();
  });

  test("a signal matched by sender follows the name to its new owner when logind restarts", async () => {
    const watcher = await connectDbus(logind.address);
    const seen: DbusValue[][] = [];
    const ignored: string[] = [];
    await watcher.onSignal(
      { interface: MANAGER, member: "PrepareForShutdown", path: LOGIND.path, sender: LOGIND.destination },
      (body) => seen.push(body),
      (sender) => ignored.push(sender),
    );
    await logind.restartLogind();
    await watcher.call({ ...CONTROL, body: [false] });
    expect(seen).toEqual([[false]]);
    expect(ignored).toEqual([]);
    watcher.close();
  });

  test("a bus that is not there is refused with an error naming its address", async () => {
    const address = `unix:path=${join(dir, "no-bus")}`;
    await expect(connectDbus(address)).rejects.toMatchObject({
      code: "DbusUnreachable",
      message: expect.stringContaining(`cannot connect to the D-Bus at ${address}: `),
    });
  });

  test("a bus that never answers fails the connection within its timeout", async () => {
    const path = join(dir, "silent");
    const silent = createServer(() => {}).listen(path);
    await new Promise((resolve) => silent.once("listening", resolve));
    await expect(connectDbus(`unix:path=${path}`, { timeoutMs: 300 })).rejects.toMatchObject({
      code: "DbusTimeout",
      message: `no answer from the D-Bus at unix:path=${path} within 0.3s`,
    });
    silent.close();
  });

  test("a bus that refuses our identity is refused with what it said", async () => {
    const path = join(dir, "refusing");
    const refusing = createServer((client) => client.on("data", () => client.write("REJECTED EXTERNAL\r\n"))).listen(
      path,
    );
    await new Promise((resolve) => refusing.once("listening", resolve));
    await expect(connectDbus(`unix:path=${path}`)).rejects.toMatchObject({
      code: "DbusAuthFailed",
      message: `the D-Bus at unix:path=${path} refused us: REJECTED EXTERNAL`,
    });
    refusing.close();
  });

  test("a call nobody answers rejects within its timeout, naming the call", async () => {
    const impatient = await connectDbus(logind.address, { timeoutMs: 300 });
    await expect(
      impatient.call({ ...LOGIND, interface: "org.kubelet.test.Control", member: "Hang" }),
    ).rejects.toMatchObject({
      code: "DbusTimeout",
      message: "no reply to org.kubelet.test.Control.Hang on org.freedesktop.login1 within 0.3s",
    });
    impatient.close();
  });

  test("a method called on our connection is answered UnknownMethod, not left waiting", async () => {
    const caller = await connectDbus(logind.address);
    expect(bus.name).toMatch(/^:\d+\.\d+$/);
    await expect(
      caller.call({ destination: bus.name, path: "/", interface: "org.freedesktop.DBus.Peer", member: "Ping" }),
    ).rejects.toMatchObject({
      dbusName: "org.freedesktop.DBus.Error.UnknownMethod",
      message: expect.stringContaining("org.freedesktop.DBus.Peer.Ping is not served by this connection (the kubelet)"),
    });
    caller.close();
  });

  test("a closed connection rejects its calls", async () => {
    const second = await connectDbus(logind.address);
    second.close();
    await expect(
      second.call({ ...GET, body: ["org.freedesktop.login1.Manager", "InhibitDelayMaxUSec"] }),
    ).rejects.toMatchObject({ code: "DbusClosed" });
  });
});

describe("D-Bus addresses", () => {
  test("the first unix:path= of a list is taken, its escapes decoded", () => {
    expect(socketPath("unix:abstract=/x;unix:path=/run/my%20bus,guid=0123")).toBe("/run/my bus");
  });

  test.each(["unix:abstract=/tmp/dbus-x", "tcp:host=127.0.0.1,port=1", "nonsense"])(
    "%s is refused, with the fix",
    (address) => {
      expect(() => socketPath(address)).toThrow(
        `D-Bus address "${address}" has no unix:path= socket (abstract sockets, tcp and others are not supported): set DBUS_SYSTEM_BUS_ADDRESS to unix:path=<socket>`,
      );
    },
  );
});
