// The one "keep the last good pod set" rule every source uses, over a table of reads in sequence.
import { describe, expect, test } from "bun:test";
import { readManifests } from "../api/manifest.ts";
import { readKeepingLastGood, type LastGood } from "./last-good.ts";

const pod = (name: string, image = "busybox:1.35") =>
  `apiVersion: v1\nkind: Pod\nmetadata: {name: ${name}}\nspec:\n  containers: [{name: c, image: "${image}"}]\n`;
const BROKEN = "apiVersion: v1\nkind: Pod\nmetadata: {name: [unclosed\n";
const parse = (text: string) => readManifests(text, { source: "file", origin: "x.yaml" });

const rows: Array<{ name: string; reads: string[]; pods: string[]; kept: boolean; rejected: number }> = [
  { name: "a good text gives its pods", reads: [pod("a")], pods: ["a"], kept: false, rejected: 0 },
  { name: "a broken first text gives no pods and its rejection", reads: [BROKEN], pods: [], kept: false, rejected: 1 },
  {
    name: "a broken text after a good one keeps the good pods",
    reads: [pod("a"), BROKEN],
    pods: ["a"],
    kept: true,
    rejected: 1,
  },
  {
    name: "one broken document among good ones keeps the whole last good set",
    reads: [pod("a"), `${pod("b")}---\n${BROKEN}`],
    pods: ["a"],
    kept: true,
    rejected: 1,
  },
  {
    name: "two broken texts in a row still keep the last good pods",
    reads: [pod("a"), BROKEN, `${BROKEN}\n`],
    pods: ["a"],
    kept: true,
    rejected: 1,
  },
  {
    name: "a good text after a broken one replaces the old pods",
    reads: [pod("a"), BROKEN, pod("b")],
    pods: ["b"],
    kept: false,
    rejected: 0,
  },
  { name: "an empty text is not broken: it means no pods", reads: [pod("a"), ""], pods: [], kept: false, rejected: 0 },
  {
    name: "a text that parses, even with a pod that will not validate, is not broken",
    reads: [pod("a"), pod("b", "")],
    pods: ["b"],
    kept: false,
    rejected: 0,
  },
];

describe("keep the last good pod set", () => {
  for (const row of rows)
    test(row.name, () => {
      let last: LastGood | undefined;
      let snapshot: ReturnType<typeof readKeepingLastGood>["snapshot"] = { pods: [], configs: [], rejected: [] };
      for (const text of row.reads) ({ snapshot, last } = readKeepingLastGood(text, last, parse));
      expect(snapshot.pods.map((p) => p.metadata.name)).toEqual(row.pods);
      expect(snapshot.rejected).toHaveLength(row.rejected);
      const details = snapshot.rejected.flatMap((r) => r.issues.map((i) => i.detail ?? ""));
      const keeping = details.filter((d) => d.endsWith("; keeping the last good version of its pods"));
      expect(keeping.length).toBe(row.kept ? details.length : 0);
    });

  test("the same text again is not parsed again: the very same snapshot comes back", () => {
    let calls = 0;
    const counting = (text: string) => (calls++, parse(text));
    const first = readKeepingLastGood(pod("a"), undefined, counting);
    const again = readKeepingLastGood(pod("a"), first.last, counting);
    expect(again.snapshot).toBe(first.last!);
    expect(calls).toBe(1);
  });

  test("the last good read keeps no copy of its text, and a changed byte is still a change", () => {
    let calls = 0;
    const counting = (text: Uint8Array) => (calls++, parse(Buffer.from(text).toString("utf8")));
    const bytes = new TextEncoder().encode(pod("a"));
    const first = readKeepingLastGood(bytes, undefined, counting);
    const kept = Object.values(first.last!).filter((v) => typeof v === "string" || v instanceof Uint8Array);
    expect(kept.every((v) => v.length < 64)).toBe(true);
    const edited = new TextEncoder().encode(pod("a", "busybox:1.36"));
    const again = readKeepingLastGood(edited, first.last, counting);
    expect(calls).toBe(2);
    expect(again.snapshot.pods[0]!.spec.containers[0]!.image).toBe("busybox:1.36");
  });
});
