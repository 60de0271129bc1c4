// The ending of a streamed exec or attach: output in order, exit codes, failures and an early stop.
import { describe, expect, test } from "bun:test";
import type { OutputChunk } from "../runtime.ts";
import { createStreamEnding } from "./stream-ending.ts";

const chunk = (text: string): OutputChunk => ({ stream: 1, data: new TextEncoder().encode(text) });
const drain = async (output: AsyncGenerator<OutputChunk>) => {
  const texts: string[] = [];
  for await (const c of output) texts.push(new TextDecoder().decode(c.data));
  return texts;
};

describe("the ending of a streamed exec or attach", () => {
  test("output hands out what was pushed, in order, then ends when the far end closes", async () => {
    const ending = createStreamEnding({ kind: "exec", action: "exec [cat] in container abc" });
    const output = drain(ending.output());
    ending.push(chunk("a"));
    ending.push(chunk("b"));
    ending.finish({ exitCode: 0 }, "no status");
    expect(await output).toEqual(["a", "b"]);
    expect(await ending.exit).toBe(0);
  });

  test("an exec settles with the status's exit code, an attach with none", async () => {
    const exec = createStreamEnding({ kind: "exec", action: "exec" });
    exec.finish({ exitCode: 3 }, "no status");
    expect(await exec.exit).toBe(3);
    const attach = createStreamEnding({ kind: "attach", action: "attach" });
    attach.finish({ exitCode: 3 }, "no status");
    expect(await attach.exit).toBeUndefined();
  });

  test("a failure status, or an exec's close without any, rejects naming the call; an attach without one ends quietly", async () => {
    const failed = createStreamEnding({ kind: "exec", action: "exec [ls] in container abc" });
    failed.finish({ error: "container not running" }, "no status");
    await expect(failed.exit).rejects.toThrow("cannot exec [ls] in container abc: container not running");
    const silent = createStreamEnding({ kind: "exec", action: "exec [ls] in container abc" });
    silent.finish(undefined, "the server closed without an exit status");
    await expect(silent.exit).rejects.toThrow(
      "cannot exec [ls] in container abc: the server closed without an exit status",
    );
    const attach = createStreamEnding({ kind: "attach", action: "attach" });
    attach.finish(undefined, "no status");
    expect(await attach.exit).toBeUndefined();
  });

  test("stop ends the output and settles with no code once; a later close of the far end changes nothing", async () => {
    const ending = createStreamEnding({ kind: "exec", action: "exec" });
    const output = drain(ending.output());
    expect(ending.stop()).toBe(true);
    expect(ending.stop()).toBe(false);
    ending.finish({ error: "late failure" }, "no status");
    expect(await output).toEqual([]);
    expect(await ending.exit).toBeUndefined();
  });
});
