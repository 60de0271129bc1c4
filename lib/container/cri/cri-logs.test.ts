import { expect, test } from "bun:test";
import { appendFileSync, mkdtempSync, renameSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseCriLogLine, readCriLog } from "./cri-logs.ts";

const file = (text: string) => {
  const path = join(mkdtempSync(join(tmpdir(), "cri-logs-")), "0.log");
  writeFileSync(path, text);
  return path;
};
const read = async (chunks: AsyncIterable<Uint8Array>) => {
  let text = "";
  for await (const c of chunks) text += new TextDecoder().decode(c);
  return text;
};

test("parses the CRI log line format, partial and full", () => {
  expect(parseCriLogLine("2026-11-23T07:00:00.000000001Z stdout F hello world")).toEqual({
    time: "2026-11-23T07:00:00.000000001Z",
    stream: "stdout",
    partial: false,
    text: "hello world",
  });
  expect(parseCriLogLine("2026-11-23T07:00:00Z stderr P part")?.partial).toBe(true);
  expect(parseCriLogLine("not a log line")).toBeUndefined();
});

test("joins partial entries and counts tail in whole lines", async () => {
  const path = file(
    "2026-11-23T07:00:00Z stdout F one\n2026-11-23T07:00:01Z stdout P tw\n2026-11-23T07:00:01Z stdout F o\n",
  );
  expect(await read(readCriLog(path, {}))).toBe("one\ntwo\n");
  expect(await read(readCriLog(path, { tail: 1 }))).toBe("two\n");
  expect(await read(readCriLog(path, { timestamps: true, tail: 1 }))).toStartWith("2026-11-23T07:00:01Z tw");
});

test("since drops older lines", async () => {
  const path = file("2026-11-23T07:00:00Z stdout F old\n2026-11-23T08:00:00Z stdout F new\n");
  expect(await read(readCriLog(path, { since: Date.parse("2026-11-23T07:30:00Z") / 1000 }))).toBe("new\n");
});

test("follow carries on in the new file after a rotation, with the old file's last lines first", async () => {
  const path = file("2026-11-23T07:00:00Z stdout F before\n");
  const controller = new AbortController();
  const seen: string[] = [];
  const reading = (async () => {
    for await (const c of readCriLog(path, { follow: true, signal: controller.signal, pollMs: 5 })) {
      seen.push(new TextDecoder().decode(c));
      if (seen.join("").includes("after")) controller.abort();
    }
  })();
  while (!seen.length) await new Promise((resolve) => setTimeout(resolve, 5));
  // The log manager's rotation: rename, the runtime's last write to the old file, then the reopen.
  renameSync(path, `${path}.20261123-070001`);
  appendFileSync(`${path}.20261123-070001`, "2026-11-23T07:00:01Z stdout F late\n");
  writeFileSync(path, "2026-11-23T07:00:02Z stdout F after\n");
  await reading;
  expect(seen.join("")).toBe("before\nlate\nafter\n");
});
