// Docker's stream formats: multiplexed frames split anywhere, event lines, pull progress errors.
import { describe, expect, test } from "bun:test";
import { demuxFrames, parseEventLine, parseEvents, pullError } from "./docker-streams.ts";

const encoder = new TextEncoder();
function frame(stream: number, text: string): Uint8Array {
  const data = encoder.encode(text);
  const out = new Uint8Array(8 + data.length);
  out[0] = stream;
  new DataView(out.buffer).setUint32(4, data.length);
  out.set(data, 8);
  return out;
}
async function* chunks(bytes: Uint8Array, size: number): AsyncGenerator<Uint8Array> {
  for (let i = 0; i < bytes.length; i += size) yield bytes.slice(i, i + size);
}

describe("Docker streams", () => {
  test("demultiplexes frames however the bytes are split", async () => {
    const bytes = new Uint8Array([...frame(1, "out\n"), ...frame(2, "err\n"), ...frame(1, "")]);
    for (const size of [1, 3, 8, 100]) {
      const frames: string[] = [];
      for await (const f of demuxFrames(chunks(bytes, size)))
        frames.push(`${f.stream}:${new TextDecoder().decode(f.data)}`);
      expect(frames).toEqual(["1:out\n", "2:err\n", "1:"]);
    }
  });

  test("parses container events, new and old formats, and skips the rest", async () => {
    expect(
      parseEventLine(
        '{"Type":"container","Action":"die","Actor":{"ID":"c1","Attributes":{"a":"b"}},"time":5,"timeNano":5000000123}',
      ),
    ).toEqual({ type: "ContainerDied", containerId: "c1", labels: { a: "b" }, time: 5000 });
    expect(parseEventLine('{"status":"start","id":"c2","time":7}')).toEqual({
      type: "ContainerStarted",
      containerId: "c2",
      labels: {},
      time: 7000,
    });
    expect(parseEventLine('{"Type":"network","Action":"connect"}')).toBeUndefined();
    const bad: string[] = [];
    const events = [];
    for await (const e of parseEvents(
      chunks(encoder.encode('{"Action":"oom","id":"c3"}\nnot json\n\n{"Action":"die","id":"c3"}'), 5),
      (l) => bad.push(l),
    ))
      events.push(e.type);
    expect(events).toEqual(["ContainerDied", "ContainerDied"]);
    expect(bad).toEqual(["not json"]);
  });

  test("finds the error a pull's progress stream carries", async () => {
    const ok = '{"status":"Pulling from library/busybox"}\n{"status":"Status: Downloaded newer image"}\n';
    expect(await pullError(chunks(encoder.encode(ok), 7))).toBeUndefined();
    const failed = '{"status":"Pulling"}\n{"errorDetail":{"message":"manifest unknown"},"error":"manifest unknown"}\n';
    expect(await pullError(chunks(encoder.encode(failed), 7))).toBe("manifest unknown");
  });

  test("reports each pull progress message with the bytes downloaded so far over every layer", async () => {
    const stream = [
      '{"status":"Pulling fs layer","id":"a1"}',
      '{"status":"Downloading","progressDetail":{"current":100,"total":300},"progress":"[=>  ] 100B/300B","id":"a1"}',
      '{"status":"Downloading","progressDetail":{"current":50,"total":80},"progress":"[==> ] 50B/80B","id":"b2"}',
      '{"status":"Downloading","progressDetail":{"current":300,"total":300},"progress":"[====] 300B/300B","id":"a1"}',
      '{"status":"Download complete","progressDetail":{},"id":"a1"}',
    ].join("\n");
    const heard: Array<[string, number]> = [];
    expect(await pullError(chunks(encoder.encode(stream), 9), (p) => heard.push([p.message, p.bytes]))).toBeUndefined();
    expect(heard).toEqual([
      ["a1: Pulling fs layer", 0],
      ["a1: Downloading [=>  ] 100B/300B", 100],
      ["b2: Downloading [==> ] 50B/80B", 150],
      ["a1: Downloading [====] 300B/300B", 350],
      ["a1: Download complete", 350],
    ]);
  });
});
