// The only consola import: leveled, tagged logs; human text on a TTY, one JSON object per
// line otherwise (journald and log shippers parse it).
// consola/core: the instance without reporters. consola's main entry builds a default instance, its fancy reporter
// and terminal tables when imported (6-10 ms of every start-up in the compiled binary): text logs require it then.
import { createRequire } from "node:module";
import { createConsola, type ConsolaInstance, type ConsolaOptions, type LogObject } from "consola/core";

/** What every part of the kubelet logs through. */
export interface Logger {
  debug(message: string, fields?: Record<string, unknown>): void;
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
  /** A logger whose lines carry `component`. */
  child(component: string): Logger;
}

export interface LoggerOptions {
  /** "text" on a TTY, "json" otherwise, unless chosen. */
  format?: "text" | "json";
  /** 0 = warnings and errors, 1 = info (default), 2+ = debug. */
  verbosity?: number;
  /** Where lines go; stderr by default so stdout stays for command output. */
  stream?: NodeJS.WritableStream;
}

/** Creates the root logger. */
export function createLogger(options: LoggerOptions = {}): Logger {
  const stream = options.stream ?? process.stderr;
  const format = options.format ?? ((stream as { isTTY?: boolean }).isTTY ? "text" : "json");
  const verbosity = options.verbosity ?? 1;
  const level = verbosity <= 0 ? 1 : verbosity === 1 ? 3 : 4;
  const settings: Partial<ConsolaOptions> = {
    level,
    stdout: stream as NodeJS.WriteStream,
    stderr: stream as NodeJS.WriteStream,
    formatOptions: { date: false, colors: (stream as { isTTY?: boolean }).isTTY === true },
  };
  const consola =
    format === "json" ? createConsola({ ...settings, reporters: [jsonReporter(stream)] }) : textConsola(settings);
  return wrap(consola, undefined);
}

/** consola with its own reporter (fancy on a terminal, basic under CI), from its main entry, loaded on first use. */
function textConsola(settings: Partial<ConsolaOptions>): ConsolaInstance {
  // A direct require("consola") call is what bun's bundler follows into the compiled binary; Deno's ES modules
  // have no global require (deno run -A bin/kubelet.ts on a terminal), so there it is createRequire's.
  const full = (
    typeof require === "function" ? require("consola") : createRequire(import.meta.url)("consola")
  ) as typeof import("consola");
  return full.createConsola(settings);
}

/** A logger that drops everything (tests, library use). */
export const silentLogger: Logger = {
  debug() {},
  info() {},
  warn() {},
  error() {},
  child: () => silentLogger,
};

function wrap(consola: ConsolaInstance, component: string | undefined): Logger {
  const tagged = component ? consola.withTag(component) : consola;
  const emit = (kind: "debug" | "info" | "warn" | "error") => (message: string, fields?: Record<string, unknown>) =>
    fields && Object.keys(fields).length ? tagged[kind](message, fields) : tagged[kind](message);
  return {
    debug: emit("debug"),
    info: emit("info"),
    warn: emit("warn"),
    error: emit("error"),
    child: (name) => wrap(consola, component ? `${component}/${name}` : name),
  };
}

const PRIORITY: Record<string, number> = {
  fatal: 2,
  error: 3,
  warn: 4,
  log: 6,
  info: 6,
  success: 6,
  debug: 7,
  trace: 7,
};

function jsonReporter(stream: NodeJS.WritableStream) {
  return {
    log(entry: LogObject) {
      const [message, fields] = entry.args as [unknown, Record<string, unknown> | undefined];
      const line: Record<string, unknown> = {
        time: entry.date.toISOString(),
        level: entry.type,
        priority: PRIORITY[entry.type] ?? 6,
        msg: message instanceof Error ? message.message : String(message),
      };
      if (entry.tag) line.component = entry.tag;
      if (fields && typeof fields === "object") Object.assign(line, fields);
      stream.write(JSON.stringify(line, (_, v) => (v instanceof Error ? v.message : v)) + "\n");
    },
  };
}
