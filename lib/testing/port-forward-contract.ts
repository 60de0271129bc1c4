// The Runtime port's portForward against a real runtime (docker.test.ts, cri.test.ts): a busybox nc echo server in a
// sandbox of its own network and in a host-network sandbox, reached through the runtime, bytes both ways.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { setTimeout as sleep } from "node:timers/promises";
import type { PodSandboxConfig } from "../container/cri-types.ts";
import type { PortForwardStream, Runtime } from "../container/runtime.ts";
import { testContainerConfig, testSandboxConfig } from "./cri-configs.ts";
import { freePortNumber } from "./ports.ts";

/**
 * Writes `text` and reads until as many bytes came back (or the pod's side ended), then closes. No half-close: a CRI
 * runtime's forward (v4 WebSocket) cannot pass one on.
 */
async function exchange(stream: PortForwardStream, text: string): Promise<string> {
  await stream.write(new TextEncoder().encode(text));
  let reply = "";
  for await (const chunk of stream.output) {
    reply += new TextDecoder().decode(chunk);
    if (reply.length >= text.length) break;
  }
  stream.close();
  await stream.done;
  return reply;
}

/** Retries a forward until the server in the pod listens (its container has just started). */
async function forwardWhenListening(runtime: Runtime, sandboxId: string, port: number): Promise<string> {
  for (let attempt = 0; ; attempt++) {
    const reply = await runtime
      .portForward(sandboxId, port)
      .then(
        (stream) => exchange(stream, "ping\n"),
        () => "",
      )
      .catch(() => "");
    if (reply || attempt > 150) return reply;
    await sleep(100);
  }
}

export function portForwardContract(
  name: string,
  makeRuntime: () => Runtime,
  options: { image: string; prefix: string },
) {
  describe(name, () => {
    const runtime = makeRuntime();
    const sandboxes: string[] = [];
    const containers: string[] = [];
    afterAll(async () => {
      for (const id of containers) await runtime.removeContainer(id);
      for (const id of sandboxes) await runtime.removePodSandbox(id);
    });
    /** A sandbox (host network or its own) running `nc -ll -p port -e cat`. */
    const echoPod = async (suffix: string, hostNetwork: boolean, port: number) => {
      const network = hostNetwork ? "NODE" : "POD";
      const base = testSandboxConfig(
        `uid-${options.prefix}pf-${suffix}-${Date.now()}`,
        `${options.prefix}pf-${suffix}`,
      );
      // A host-network sandbox has the host's UTS namespace too, so no hostname of its own (runc refuses one).
      const { hostname: _, ...shared } = base;
      const sandbox: PodSandboxConfig = {
        ...(hostNetwork ? shared : base),
        linux: { security_context: { namespace_options: { network, ipc: "POD", pid: "CONTAINER" } } },
      };
      const id = await runtime.runPodSandbox(sandbox);
      sandboxes.push(id);
      const config = testContainerConfig(
        sandbox,
        "echo",
        0,
        options.image,
        ["nc", "-ll", "-p", String(port), "-e", "cat"],
        {
          linux: { security_context: { namespace_options: { network, ipc: "POD", pid: "CONTAINER" } } },
        },
      );
      const container = await runtime.createContainer(id, config, sandbox);
      containers.push(container);
      await runtime.startContainer(container);
      return id;
    };
    let isolated = "";
    let host = "";
    let hostPort = 0;
    beforeAll(async () => {
      hostPort = await freePortNumber();
      isolated = await echoPod("own", false, 18090);
      host = await echoPod("host", true, hostPort);
    });

    test("forwards a connection to a port in a sandbox's own network: bytes both ways", async () => {
      expect(await forwardWhenListening(runtime, isolated, 18090)).toBe("ping\n");
      const stream = await runtime.portForward(isolated, 18090);
      const payload = "y".repeat(200_000);
      expect(await exchange(stream, payload)).toBe(payload);
    }, 30_000);

    test("forwards a connection to a host-network sandbox's port on the host's loopback", async () => {
      expect(await forwardWhenListening(runtime, host, hostPort)).toBe("ping\n");
    }, 30_000);

    test("a port nothing listens on fails the forward with the runtime's reason", async () => {
      const failure = await runtime
        .portForward(isolated, 18091)
        .then(
          async (stream) => {
            await exchange(stream, "hello\n");
            return undefined;
          },
          (error: Error) => error,
        )
        .catch((error: Error) => error);
      expect(failure?.message).toMatch(/18091/);
    }, 30_000);

    test("a forward to a sandbox that does not exist fails NotFound", async () => {
      const failure = await runtime.portForward("0".repeat(64), 80).then(
        () => undefined,
        (error: { code?: string }) => error,
      );
      expect(failure?.code).toBe("NotFound");
    });
  });
}
