// A small D-Bus client (in place of dbus-next, whose introspection XML stack and service side cost the binary
// ~1 MiB): a unix socket to a bus (`unix:path=`), SASL EXTERNAL, Hello, method calls matched to their replies
// by serial (each with a timeout), and signals after AddMatch (only those from a well-known name's current owner
// when the match names a sender). Messages are lib/node/shutdown/dbus-message.ts's.
// No unix fd passing (Node and Bun sockets cannot carry SCM_RIGHTS), hence no abstract sockets either.
import { createConnection } from "node:net";
import { KubeletError } from "../../api/types.ts";
import {
  createMessageFramer,
  type DbusValue,
  encodeMessage,
  type Message,
  MessageType,
  NO_REPLY_EXPECTED,
} from "./dbus-message.ts";

export type { DbusValue, Variant } from "./dbus-message.ts";

/** The system bus: $DBUS_SYSTEM_BUS_ADDRESS, else the well-known socket. */
export function systemBusAddress(): string {
  return process.env.DBUS_SYSTEM_BUS_ADDRESS || "unix:path=/run/dbus/system_bus_socket";
}

/** A method call: whom, what, and the arguments with their signature. */
export interface Call {
  destination: string;
  path: string;
  interface: string;
  member: string;
  signature?: string;
  body?: DbusValue[];
}

/** The signals a listener gets: those of `interface`.`member`, from `path` when given. */
export interface SignalMatch {
  interface: string;
  member: string;
  path?: string;
  /**
   * A well-known name (org.freedesktop.login1): only signals whose sender is its owner's unique name, asked of the
   * bus when subscribing and followed through NameOwnerChanged. Any connection may send a signal (broadcast, or
   * addressed to us past every match rule), so the sender header is what tells the real one.
   */
  sender?: string;
}

/** A connection to a bus. */
export interface DbusConnection {
  /** This connection's unique name on the bus (Hello's answer), e.g. ":1.42". */
  name: string;
  /** Calls a method; resolves to the reply's body, rejects with DbusError (carrying `dbusName`) or DbusTimeout. */
  call(call: Call): Promise<DbusValue[]>;
  /**
   * Asks the bus for the signals `match` selects (AddMatch) and hands each one's body to `listener`; a signal from
   * a sender other than the owner of `match.sender` is dropped and given to `ignored` (owner "" when none).
   */
  onSignal(
    match: SignalMatch,
    listener: (body: DbusValue[]) => void,
    ignored?: (sender: string, owner: string) => void,
  ): Promise<void>;
  close(): void;
}

/** An ERROR reply: `dbusName` is the D-Bus error name, e.g. org.freedesktop.DBus.Error.ServiceUnknown. */
export class DbusError extends KubeletError {
  constructor(
    readonly dbusName: string,
    message: string,
  ) {
    super("DbusError", message);
  }
}

const BUS = { destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus" };

/** The socket path of the first `unix:path=` address in a `;`-separated list; throws DbusBadAddress otherwise. */
export function socketPath(address: string): string {
  for (const entry of address.split(";")) {
    const colon = entry.indexOf(":");
    const transport = entry.slice(0, colon);
    const keys = new Map(
      entry
        .slice(colon + 1)
        .split(",")
        .map((pair) => pair.split("=", 2) as [string, string]),
    );
    const path = keys.get("path");
    if (transport === "unix" && path) return decodeURIComponent(path);
  }
  throw new KubeletError(
    "DbusBadAddress",
    `D-Bus address "${address}" has no unix:path= socket (abstract sockets, tcp and others are not supported): set DBUS_SYSTEM_BUS_ADDRESS to unix:path=<socket>`,
  );
}

/**
 * Connects to the bus at `address` and says Hello. Throws DbusUnreachable naming the address when the socket is
 * not there or refuses, DbusAuthFailed when the bus rejects us, DbusTimeout when it does not answer in time.
 */
export async function connectDbus(address: string, options: { timeoutMs?: number } = {}): Promise<DbusConnection> {
  const timeoutMs = options.timeoutMs ?? 25_000; // libdbus's default reply timeout
  const path = socketPath(address);
  const socket = createConnection({ path });
  let serial = 0;
  const nextSerial = () => (serial = (serial % 0xffffffff) + 1);
  /** The calls waiting for a reply, by serial: each settles with the reply or the connection's end. */
  const pending = new Map<number, (reply: Message | Error) => void>();
  const listeners: Array<{
    match: SignalMatch;
    listener: (body: DbusValue[]) => void;
    ignored?: (sender: string, owner: string) => void;
  }> = [];
  /** The unique name owning each well-known name a match names as sender ("" while none does). */
  const owners = new Map<string, string>();
  let closed: Error | undefined;
  const fail = (error: Error) => {
    closed ??= error;
    socket.destroy();
    for (const settle of pending.values()) settle(error);
  };

  const framer = createMessageFramer();
  const receive = (message: Message) => {
    if (message.type === MessageType.MethodReturn || message.type === MessageType.Error)
      pending.get(message.replySerial ?? 0)?.(message);
    else if (message.type === MessageType.MethodCall && !(message.flags! & NO_REPLY_EXPECTED))
      // We serve nothing; the specification asks for an error rather than silence.
      socket.write(
        encodeMessage({
          type: MessageType.Error,
          serial: nextSerial(),
          replySerial: message.serial,
          destination: message.sender,
          errorName: "org.freedesktop.DBus.Error.UnknownMethod",
          signature: "s",
          body: [`${message.interface}.${message.member} is not served by this connection (the kubelet)`],
        }),
      );
    else if (message.type === MessageType.Signal) {
      if (
        message.sender === BUS.destination &&
        message.interface === BUS.interface &&
        message.member === "NameOwnerChanged"
      ) {
        const [name, , owner] = message.body as [string, string, string];
        if (owners.has(name)) owners.set(name, owner);
      }
      for (const { match, listener, ignored } of listeners) {
        if (
          match.interface !== message.interface ||
          match.member !== message.member ||
          (match.path !== undefined && match.path !== message.path)
        )
          continue;
        const owner = match.sender === undefined ? undefined : (owners.get(match.sender) ?? "");
        if (owner === undefined || (owner !== "" && message.sender === owner)) listener(message.body ?? []);
        else ignored?.(message.sender ?? "", owner);
      }
    }
  };

  const call = (request: Call) => {
    if (closed) return Promise.reject(closed);
    const id = nextSerial();
    const what = `${request.interface}.${request.member} on ${request.destination}`;
    return new Promise<DbusValue[]>((resolve, reject) => {
      const settle = (reply: Message | Error) => {
        clearTimeout(timer);
        pending.delete(id);
        if (reply instanceof Error) reject(reply);
        else if (reply.type === MessageType.Error) {
          const text = typeof reply.body?.[0] === "string" ? reply.body[0] : "no message given";
          reject(new DbusError(reply.errorName ?? "", `${what}: ${reply.errorName}: ${text}`));
        } else resolve(reply.body ?? []);
      };
      const timer = setTimeout(
        () => settle(new KubeletError("DbusTimeout", `no reply to ${what} within ${timeoutMs / 1000}s`)),
        timeoutMs,
      );
      pending.set(id, settle);
      socket.write(encodeMessage({ type: MessageType.MethodCall, serial: id, ...request }));
    });
  };

  // Until BEGIN the bus speaks lines (SASL); after it, messages.
  let authenticated = false;
  let lines = "";
  const ready = new Promise<void>((resolve, reject) => {
    const unreachable = (error: Error) =>
      reject(new KubeletError("DbusUnreachable", `cannot connect to the D-Bus at ${address}: ${error.message}`));
    socket.once("error", unreachable);
    socket.once("connect", () => {
      socket.off("error", unreachable);
      socket.write(`\0AUTH EXTERNAL ${hexDigits(String(process.getuid?.() ?? 0))}\r\n`);
    });
    socket.on("data", (chunk: Uint8Array) => {
      if (authenticated) {
        try {
          for (const message of framer.push(chunk)) receive(message);
        } catch (error) {
          fail(error as Error);
        }
        return;
      }
      lines += new TextDecoder().decode(chunk);
      if (!lines.includes("\r\n")) return;
      if (!lines.startsWith("OK ")) {
        reject(new KubeletError("DbusAuthFailed", `the D-Bus at ${address} refused us: ${lines.trim()}`));
        return;
      }
      authenticated = true;
      socket.write("BEGIN\r\n");
      resolve();
    });
  });
  socket.on("error", (error) =>
    fail(new KubeletError("DbusClosed", `the connection to the D-Bus at ${address} failed: ${error.message}`)),
  );
  socket.on("close", () => fail(new KubeletError("DbusClosed", `the D-Bus at ${address} closed the connection`)));

  const timer = setTimeout(
    () => fail(new KubeletError("DbusTimeout", `no answer from the D-Bus at ${address} within ${timeoutMs / 1000}s`)),
    timeoutMs,
  );
  let name: string;
  try {
    await Promise.race([ready, new Promise<never>((_, reject) => socket.once("close", () => reject(closed)))]);
    [name] = (await call({ ...BUS, member: "Hello" })) as [string];
  } catch (error) {
    fail(error as Error);
    throw error;
  } finally {
    clearTimeout(timer);
  }

  /** AddMatch for the signals whose header fields (and arg0) are those given. */
  const addMatch = (fields: SignalMatch & { arg0?: string }) => {
    const rule = Object.entries({ type: "signal", ...fields })
      .filter(([key, value]) => value !== undefined && key !== "destination")
      .map(([key, value]) => `${key}='${value}'`)
      .join(",");
    return call({ ...BUS, member: "AddMatch", signature: "s", body: [rule] });
  };

  return {
    name,
    call,
    async onSignal(match, listener, ignored) {
      const { sender } = match;
      if (sender !== undefined && !owners.has(sender)) {
        // Watch the name before asking for its owner, so that no change between the two is missed.
        owners.set(sender, "");
        await addMatch({ ...BUS, sender: BUS.destination, member: "NameOwnerChanged", arg0: sender });
        const owner = await call({ ...BUS, member: "GetNameOwner", signature: "s", body: [sender] }).catch(
          (error: DbusError) => {
            if (error.dbusName === "org.freedesktop.DBus.Error.NameHasNoOwner") return [""];
            throw error;
          },
        );
        owners.set(sender, owner[0] as string);
      }
      await addMatch(match);
      listeners.push({ match, listener, ignored });
    },
    close: () => fail(new KubeletError("DbusClosed", `the connection to the D-Bus at ${address} is closed`)),
  };
}

/** SASL EXTERNAL's identity: the uid's decimal digits, each as two hex digits ("1000" → "31303030"). */
function hexDigits(text: string): string {
  return [...text].map((c) => c.charCodeAt(0).toString(16)).join("");
}
