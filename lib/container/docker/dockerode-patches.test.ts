import { expect, test } from "bun:test";
import { createServer } from "node:http";
import url from "node:url";
import util from "node:util";
import Docker from "dockerode";

/** How often `target[method]` is called while `during` runs (the method is wrapped, then put back). */
async function callsTo<T extends object>(target: T, method: keyof T, during: () => Promise<void>): Promise<number> {
  const original = target[method] as (...args: unknown[]) => unknown;
  let calls = 0;
  target[method] = ((...args: unknown[]) => (calls++, original.apply(target, args))) as T[keyof T];
  try {
    await during();
  } finally {
    target[method] = original as T[keyof T];
  }
  return calls;
}

// patches/docker-modem+*.patch: docker-modem formatted every request with util.inspect(…, depth: null) for a debug
// line even with debugging off, ≈4× the CPU of the request itself on the kubelet's idle polling.
test("a Docker request with debugging off formats nothing for the debug log", async () => {
  const calls = await callsTo(util, "inspect", async () => {
    const docker = new Docker({ socketPath: "/nonexistent/kubelet-test/docker.sock" });
    await docker.ping().catch(() => undefined); // refused: the request was built all the same
  });
  expect(calls).toBe(0);
});

// patches/docker-modem+*.patch: docker-modem required ssh2 at load for ssh:// hosts; ssh2's crypto holds ≈36 MB of
// heap in every process that loads it, a third of the kubelet's memory on a node with 110 pods.
test("a Docker client on a unix socket loads no ssh2; an ssh:// host loads it when it connects", () => {
  const script = `
    const Docker = require("dockerode");
    const ssh2 = () => Object.keys(require.cache).filter((k) => k.includes("/node_modules/ssh2/")).length;
    const counts = [];
    await new Docker({ socketPath: "/nonexistent/kubelet-test/docker.sock" }).ping().catch(() => undefined);
    counts.push(ssh2());
    await new Docker({ protocol: "ssh", host: "127.0.0.1", port: 1 }).ping().catch(() => undefined);
    counts.push(ssh2());
    console.log(JSON.stringify(counts));`;
  const run = Bun.spawnSync([process.execPath, "-e", script], { cwd: import.meta.dir, stderr: "pipe" });
  const [unixSocket, ssh] = JSON.parse(run.stdout.toString().trim().split("\n").pop()!) as number[];
  expect(unixSocket).toBe(0);
  expect(ssh).toBeGreaterThan(0);
});

// patches/docker-modem+*.patch: docker-modem built every tcp:// request with url.parse, and Node warned
// "[DEP0169] DeprecationWarning: url.parse()" at every start of a kubelet with a tcp:// --docker_endpoint.
test("a Docker request to a tcp:// host reaches the path and query asked for, without url.parse", async () => {
  const seen: string[] = [];
  const server = createServer((request, response) => {
    seen.push(`${request.headers.host} ${request.url}`);
    response.end("[]");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;
  let calls: number;
  try {
    calls = await callsTo(url, "parse", async () => {
      await new Docker({ host: "127.0.0.1", port, protocol: "http" }).listContainers({ all: true });
    });
  } finally {
    server.close();
  }
  expect(seen).toEqual([`127.0.0.1:${port} /containers/json?all=true`]);
  expect(calls).toBe(0);
});
