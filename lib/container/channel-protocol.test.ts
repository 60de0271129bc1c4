import { describe, expect, test } from "bun:test";
import {
  decodeFrame,
  decodeResize,
  encodeFrame,
  encodeResize,
  exitStatus,
  internalErrorStatus,
  negotiateProtocol,
  readStatus,
  statusFrame,
} from "./channel-protocol.ts";

const bytes = (text: string) => new TextEncoder().encode(text);

describe("channel protocol", () => {
  test("a frame is the channel byte followed by the payload, and decodes back", () => {
    const frame = encodeFrame(2, bytes("err\n"));
    expect([...frame]).toEqual([2, ...bytes("err\n")]);
    const decoded = decodeFrame(frame)!;
    expect(decoded.channel).toBe(2);
    expect(new TextDecoder().decode(decoded.data)).toBe("err\n");
  });

  test("an empty frame on a channel is the channel byte alone; an empty message carries no channel", () => {
    expect([...encodeFrame(1)]).toEqual([1]);
    expect(decodeFrame(encodeFrame(1))?.data.length).toBe(0);
    expect(decodeFrame(new Uint8Array(0))).toBeUndefined();
  });

  test("negotiation takes the client's first protocol that is served, and none of an unknown list", () => {
    expect(negotiateProtocol("v4.channel.k8s.io, v5.channel.k8s.io")).toBe("v4.channel.k8s.io");
    expect(negotiateProtocol("base64.channel.k8s.io,v5.channel.k8s.io")).toBe("base64.channel.k8s.io");
    expect(negotiateProtocol("channel.k8s.io")).toBe("channel.k8s.io");
    expect(negotiateProtocol("v2.channel.k8s.io, v3.channel.k8s.io")).toBeUndefined();
    expect(negotiateProtocol(null)).toBeUndefined();
  });

  test("exit code 0 is a Success Status; another code is NonZeroExitCode with the code as ExitCode cause", () => {
    expect(exitStatus(0)).toEqual({ metadata: {}, status: "Success" });
    expect(exitStatus(undefined)).toEqual({ metadata: {}, status: "Success" });
    expect(exitStatus(3)).toEqual({
      metadata: {},
      status: "Failure",
      message: "command terminated with non-zero exit code: exit status 3",
      reason: "NonZeroExitCode",
      details: { causes: [{ reason: "ExitCode", message: "3" }] },
    });
  });

  test("a status frame goes out on channel 3 and reads back as the exit code or the failure's message", () => {
    for (const code of [0, 3, 127]) {
      const frame = decodeFrame(statusFrame(exitStatus(code)))!;
      expect(frame.channel).toBe(3);
      expect(readStatus(frame.data)).toEqual({ exitCode: code });
    }
    const failed = decodeFrame(statusFrame(internalErrorStatus("no such container")))!;
    expect(readStatus(failed.data)).toEqual({ error: "Internal error occurred: no such container" });
    expect(readStatus(bytes("plain text error"))).toEqual({ error: "plain text error" });
  });

  test("resizes travel as Go's TerminalSize JSON; malformed sizes are refused", () => {
    expect(new TextDecoder().decode(encodeResize({ width: 80, height: 24 }))).toBe('{"Width":80,"Height":24}');
    expect(decodeResize(encodeResize({ width: 132, height: 43 }))).toEqual({ width: 132, height: 43 });
    for (const bad of ['{"Width":0,"Height":24}', '{"Width":"80","Height":24}', "{", '{"width":80,"height":24}'])
      expect(decodeResize(bytes(bad))).toBeUndefined();
  });
});
