import { describe, expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { createLogger } from "./log.ts";

function capture(format: "text" | "json", verbosity = 1) {
  const stream = new PassThrough();
  let out = "";
  stream.on("data", (d) => (out += d));
  return { log: createLogger({ format, verbosity, stream }), out: () => out };
}

/** The consola files a fresh process has loaded after `createLogger({ format })`. */
function consolaFilesLoaded(format: "text" | "json"): string[] {
  const script = `const { createLogger } = await import(${JSON.stringify(join(import.meta.dir, "log.ts"))});
createLogger({ format: "${format}", stream: new (await import("node:stream")).PassThrough() }).info("x");
console.log(JSON.stringify(Object.keys(require.cache).filter((k) => k.includes("/consola/"))));`;
  const run = spawnSync(process.execPath, ["-e", script], { encoding: "utf8" });
  if (run.status !== 0) throw new Error(run.stderr);
  return (JSON.parse(run.stdout) as string[]).map((file) => file.slice(file.indexOf("/consola/") + "/consola/".length));
}

describe("createLogger", () => {
  test("a JSON logger writes one object per line: time, level, priority, message, component and the fields", () => {
    const { log, out } = capture("json");
    log.child("pleg").warn("relist took 3s", { pods: 2 });
    const line = JSON.parse(out());
    expect(line).toEqual({
      time: line.time,
      level: "warn",
      priority: 4,
      msg: "relist took 3s",
      component: "pleg",
      pods: 2,
    });
    expect(new Date(line.time).toISOString()).toBe(line.time);
  });

  test("verbosity 0 keeps warnings and errors, 2 adds debug lines", () => {
    const quiet = capture("json", 0);
    quiet.log.info("i");
    quiet.log.warn("w");
    expect(
      quiet
        .out()
        .split("\n")
        .filter(Boolean)
        .map((l) => JSON.parse(l).msg),
    ).toEqual(["w"]);
    const loud = capture("json", 2);
    loud.log.debug("d");
    expect(JSON.parse(loud.out()).level).toBe("debug");
  });

  test("a text logger writes consola's human line: the component in brackets, the message, the fields", () => {
    const { log, out } = capture("text");
    log.child("sync").info("pod started", { pod: "web" });
    expect(out()).toContain("[sync]");
    expect(out()).toContain("pod started");
    expect(out()).toContain("pod: 'web'");
  });

  test("a JSON logger loads consola's core only, not its main entry (a default instance and its reporters)", () => {
    expect(consolaFilesLoaded("json")).toEqual(["dist/core.mjs"]);
    expect(consolaFilesLoaded("text")).toContain("dist/index.cjs");
  });
});
