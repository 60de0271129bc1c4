import { describe, expect, test } from "bun:test";
import { KubeletError } from "../../api/types.ts";
import { call, mapError, tolerating } from "./docker-calls.ts";

const engineError = (statusCode: number, message: string) =>
  Object.assign(new Error(`(HTTP code ${statusCode}) ${message}`), { statusCode, json: { message } });

describe("mapping an Engine error", () => {
  test("404 is NotFound and 409 Conflict, with the Engine's message after the action", () => {
    expect(mapError(engineError(404, "No such container: abc"), "start container abc")).toMatchObject({
      code: "NotFound",
      message: "cannot start container abc: No such container: abc",
    });
    expect(mapError(engineError(409, "name in use"), "create container x")).toMatchObject({ code: "Conflict" });
  });

  test("a refused or missing socket is RuntimeUnavailable and names the fix; another failure is RuntimeError", () => {
    const refused = Object.assign(new Error("connect ECONNREFUSED /var/run/docker.sock"), { code: "ECONNREFUSED" });
    const mapped = mapError(refused, "list containers");
    expect(mapped.code).toBe("RuntimeUnavailable");
    expect(mapped.message).toStartWith(
      "cannot list containers: the Docker Engine is unreachable: connect ECONNREFUSED",
    );
    expect(mapped.message).toContain("--docker_endpoint");
    expect(mapError(engineError(500, "server error"), "list images")).toMatchObject({
      code: "RuntimeError",
      message: "cannot list images: server error",
    });
  });

  test("a KubeletError passes through as it is", () => {
    const error = new KubeletError("Conflict", "cannot remove image abc: container def uses it");
    expect(mapError(error, "remove image abc")).toBe(error);
  });
});

describe("one Engine call", () => {
  test("answers what the Engine answers, with its errors mapped", async () => {
    expect(await call("read", async () => 42, { timeoutMs: 1000 })).toBe(42);
    await expect(
      call("inspect container abc", () => Promise.reject(engineError(404, "gone")), { timeoutMs: 1000 }),
    ).rejects.toMatchObject({ code: "NotFound", message: "cannot inspect container abc: gone" });
  });

  test("an Engine that does not answer within the deadline is RuntimeUnavailable, and the request is aborted", async () => {
    let requestSignal: AbortSignal | undefined;
    const never = (signal: AbortSignal) => ((requestSignal = signal), new Promise<never>(() => {}));
    await expect(call("list containers", never, { timeoutMs: 5 })).rejects.toMatchObject({
      code: "RuntimeUnavailable",
      message: "cannot list containers: the Docker Engine did not answer within 5 ms",
    });
    expect(requestSignal?.aborted).toBe(true);
  });

  test("the caller's abort ends the call with the caller's reason, even for a call that takes no signal", async () => {
    const caller = new AbortController();
    const pending = call("start exec", () => new Promise<never>(() => {}), {
      timeoutMs: Infinity,
      signal: caller.signal,
    });
    caller.abort(new Error("pod deleted"));
    await expect(pending).rejects.toThrow("pod deleted");
  });

  test("a stream's request stays linked to the caller's signal after the answer; a plain call's does not", async () => {
    for (const stream of [true, false]) {
      const caller = new AbortController();
      let requestSignal: AbortSignal | undefined;
      await call("follow", async (signal) => void (requestSignal = signal), {
        timeoutMs: 1000,
        signal: caller.signal,
        stream,
      });
      caller.abort();
      expect(requestSignal?.aborted).toBe(stream);
    }
  });

  test("tolerating takes the listed statuses as done and throws the others", async () => {
    await tolerating([304], () => Promise.reject(engineError(304, "already started")));
    await expect(tolerating([304], () => Promise.reject(engineError(404, "gone")))).rejects.toMatchObject({
      statusCode: 404,
    });
  });
});
