import { expect, test } from "bun:test";
import util from "node:util";
import Docker from "dockerode";

// patches/docker-modem+*.patch: docker-modem formatted every request with util.inspect(…, depth: null) for a debug
// line even with debugging off, ≈4× the CPU of the request itself on the kubelet's idle polling.
test("a Docker request with debugging off formats nothing for the debug log", async () => {
  const inspect = util.inspect;
  let calls = 0;
  util.inspect = ((...args: Parameters<typeof inspect>) => {
    calls++;
    return inspect(...args);
  }) as typeof inspect;
  try {
    const docker = new Docker({ socketPath: "/nonexistent/kubelet-test/docker.sock" });
    await docker.ping().catch(() => undefined); // refused: the request was built all the same
  } finally {
    util.inspect = inspect;
  }
  expect(calls).toBe(0);
});
