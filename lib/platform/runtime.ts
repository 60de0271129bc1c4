// Which JavaScript runtime we run on (the only place that reads the Bun/Deno globals for it).
declare const Bun: { version: string } | undefined;
declare const Deno: { version: { deno: string } } | undefined;

/** "bun 1.4.5", "deno 2.9.6" or "node v20.20.2". */
export function runtimeName(): string {
  if (typeof Bun !== "undefined") return `bun ${Bun.version}`;
  if (typeof Deno !== "undefined") return `deno ${Deno.version.deno}`;
  return `node ${process.version}`;
}

/** The runtime family, for picking an adapter. */
export function runtimeKind(): "bun" | "deno" | "node" {
  if (typeof Bun !== "undefined") return "bun";
  if (typeof Deno !== "undefined") return "deno";
  return "node";
}
