// The listeners checked before start-up: a port in use is one line naming its flag, on a real socket.
import { afterEach, expect, test } from "bun:test";
import { createServer, type Server } from "node:net";
import { DEFAULT_CONFIG } from "../config/config-types.ts";
import { checkListeners, configuredListeners } from "./listeners.ts";

let holder: Server | undefined;
afterEach(() => void holder?.close());

/** A port held by another listener, as an operator's other service would. */
const heldPort = () =>
  new Promise<number>((resolve) => {
    holder = createServer().listen(0, "127.0.0.1", () => resolve((holder!.address() as { port: number }).port));
  });

test("lists --port, --read_only_port and --healthz_port as configured, and no listener at port 0 but --port's", () => {
  const config = { ...DEFAULT_CONFIG, port: 0, readOnlyPort: 10255, healthzPort: 0 };
  expect(configuredListeners(config).map((l) => `${l.flag} ${l.host}:${l.port}`)).toEqual([
    "--port 127.0.0.1:0",
    "--read_only_port 127.0.0.1:10255",
  ]);
  expect(configuredListeners({ ...config, enableServer: false })).toEqual([]);
});

for (const flag of ["--port", "--read_only_port", "--healthz_port"] as const)
  test(`an address in use at ${flag} is refused in one line naming the flag and the fix`, async () => {
    const port = await heldPort();
    const listeners = [{ flag, hostFlag: "--address", host: "127.0.0.1", port }];
    await expect(checkListeners(listeners)).rejects.toMatchObject({
      code: "ListenerUnavailable",
      message: `cannot listen on 127.0.0.1:${port} (${flag}): the address is in use: stop what listens there (ss -ltnp 'sport = :${port}') or give ${flag} another port`,
    });
  });

test("a free address passes and is free again afterwards", async () => {
  const port = await heldPort();
  await new Promise((closed) => holder!.close(closed));
  const listeners = [{ flag: "--port", hostFlag: "--address", host: "127.0.0.1", port }];
  await expect(checkListeners(listeners)).resolves.toBeUndefined();
  // Free again: the check's own socket is closed, so a server (the kubelet's, next) can bind the address.
  const server = createServer();
  const bound = await new Promise<number>((resolve, reject) => {
    server.once("error", reject);
    server.listen({ host: "127.0.0.1", port, exclusive: true }, () =>
      resolve((server.address() as { port: number }).port),
    );
  }).finally(() => server.close());
  expect(bound).toBe(port);
});
