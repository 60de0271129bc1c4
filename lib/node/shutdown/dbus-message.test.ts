import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import {
  createMessageFramer,
  type DbusValue,
  decodeMessage,
  encodeMessage,
  type Message,
  MessageType,
  marshal,
  parseSignature,
  unmarshal,
} from "./dbus-message.ts";

const testdata = join(import.meta.dir, "../../../testdata/dbus");
/** A message GLib marshalled (testdata/dbus/generate.py), in byte order `order`. */
const fixture = (name: string, order: "le" | "be") =>
  new Uint8Array(readFileSync(join(testdata, `${name}.${order}.bin`)));

/** What testdata/dbus/generate.py put in each message. */
const FIXTURES: Record<string, Partial<Message>> = {
  "get-reply": {
    type: MessageType.MethodReturn,
    replySerial: 2,
    signature: "v",
    body: [{ signature: "t", value: 5000000n }],
  },
  "list-inhibitors": {
    type: MessageType.MethodReturn,
    replySerial: 2,
    signature: "a(ssssuu)",
    body: [
      [
        ["shutdown", "kubelet", "Kubelet needs time to handle node shutdown", "delay", 0, 4242],
        ["sleep", "ü", "", "block", 1000, 1],
      ],
    ],
  },
  "every-type": {
    type: MessageType.Signal,
    path: "/org/kubelet/Test",
    interface: "org.kubelet.Test",
    member: "Everything",
    signature: "ybynyqyiyuyxytydysyoygyvya(yt)ya{sv}y(yai)yab",
    body: [
      ...[1, true, 2, -3, 4, 65535, 5, -7, 6, 4294967295, 7, -(2n ** 63n), 8, 2n ** 64n - 1n, 9, -1.5],
      ...[10, "text", 11, "/a/b", 12, "a(yv)", 13, { signature: "(st)", value: ["in", 3n] }],
      ...[
        14,
        [
          [1, 2n],
          [3, 4n],
        ],
        15,
        [["k", { signature: "q", value: 7 }]],
        16,
        [17, [1, 2, 3]],
        18,
        [],
      ],
    ],
  },
  error: {
    type: MessageType.Error,
    replySerial: 3,
    errorName: "org.freedesktop.DBus.Error.ServiceUnknown",
    signature: "s",
    body: ["The name is not activatable"],
  },
};

describe("D-Bus messages", () => {
  for (const [name, expected] of Object.entries(FIXTURES))
    for (const order of ["le", "be"] as const)
      test(`GLib's ${name} message, ${order === "le" ? "little" : "big"}-endian, decodes to its header fields and body`, () => {
        expect(decodeMessage(fixture(name, order))).toMatchObject({ ...expected, serial: 7 });
      });

  for (const [name, { signature, body }] of Object.entries(FIXTURES))
    test(`${name}'s body marshals to GLib's bytes, padding included`, () => {
      const glib = fixture(name, "le");
      const bodyLength = new DataView(glib.buffer).getUint32(4, true);
      expect(marshal(signature!, body!)).toEqual(glib.subarray(glib.length - bodyLength));
    });

  test.each([
    ["y", [255]],
    ["b", [false]],
    ["n", [-32768]],
    ["q", [65535]],
    ["i", [-2147483648]],
    ["u", [4294967295]],
    ["x", [-(2n ** 63n)]],
    ["t", [2n ** 64n - 1n]],
    ["d", [Math.PI]],
    ["s", ["grüße"]],
    ["o", ["/org/freedesktop/login1"]],
    ["g", ["a{sv}"]],
    ["v", [{ signature: "at", value: [1n, 2n] }]],
    ["a(ssssuu)", [[["shutdown", "kubelet", "why", "delay", 0, 12]]]],
    ["a{sa(yt)}", [[["k", [[1, 2n]]]]]],
    ["(yv)", [[8, { signature: "g", value: "s" }]]],
    ["aay", [[[1, 2], [], [3]]]],
  ] as Array<[string, DbusValue[]]>)("%s round-trips", (signature, values) => {
    expect(unmarshal(signature, marshal(signature, values))).toEqual(values);
  });

  test("an array pads to its element's alignment after its length, and the length leaves that padding out", () => {
    // y, 3 bytes of padding, length 8 (u), padding to 8, then one t.
    expect([...marshal("yat", [1, [2n]])]).toEqual([1, 0, 0, 0, 8, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0]);
    // An empty array of structs still pads to 8 after its length.
    expect([...marshal("ya(y)", [1, []])]).toEqual([1, 0, 0, 0, 0, 0, 0, 0]);
  });

  test("each struct in an array starts on 8 bytes", () => {
    expect([
      ...marshal("a(yy)", [
        [
          [1, 2],
          [3, 4],
        ],
      ]),
    ]).toEqual([10, 0, 0, 0, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 0, 0, 3, 4]);
  });

  test("a method call round-trips through encode and decode", () => {
    const call: Message = {
      type: MessageType.MethodCall,
      flags: 0,
      serial: 9,
      destination: "org.freedesktop.login1",
      path: "/org/freedesktop/login1",
      interface: "org.freedesktop.DBus.Properties",
      member: "Get",
      signature: "ss",
      body: ["org.freedesktop.login1.Manager", "InhibitDelayMaxUSec"],
    };
    expect(decodeMessage(encodeMessage(call))).toEqual(call);
  });

  test("a message split across reads comes out once whole, and two in one read come out both", () => {
    const framer = createMessageFramer();
    const one = fixture("list-inhibitors", "le");
    const two = fixture("every-type", "be");
    expect(framer.push(one.subarray(0, 10))).toEqual([]);
    expect(framer.push(one.subarray(10, 100))).toEqual([]);
    expect(framer.push(one.subarray(100))).toMatchObject([FIXTURES["list-inhibitors"]!]);
    const both = new Uint8Array([...two, ...one, ...two.subarray(0, 20)]);
    expect(framer.push(both)).toMatchObject([FIXTURES["every-type"]!, FIXTURES["list-inhibitors"]!]);
    expect(framer.push(two.subarray(20))).toMatchObject([FIXTURES["every-type"]!]);
  });

  test.each([
    ["a", "ends inside a type"],
    ["(yz)", 'unknown type code "z"'],
    ["()", "empty struct"],
    ["a{s}", "dict entry without key and value"],
  ])("the signature %s is refused: %s", (signature, reason) => {
    expect(() => parseSignature(signature)).toThrow(reason);
  });

  test("a message that claims more than it holds, or a bad byte order, is refused with DbusMalformed", () => {
    const cut = fixture("get-reply", "le").slice(0, 40);
    expect(() => decodeMessage(cut)).toThrow(expect.objectContaining({ code: "DbusMalformed" }));
    const bad = fixture("get-reply", "le");
    bad[0] = 0x58;
    expect(() => createMessageFramer().push(bad)).toThrow("endianness byte 88 is neither 'l' nor 'B'");
  });
});
