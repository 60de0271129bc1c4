// The CRI runtime against the private containerd 1.6 (relisted) and 1.7 (its event stream): the shared contract, plus
// what only the CRI shows, on each.
import { afterAll, describe, expect, test } from "bun:test";
import { systemClock } from "../../clock.ts";
import { describeOnContainerd } from "../../testing/services.ts";
import { createCriClient } from "./cri-client.ts";
import { createCriRuntime } from "./cri.ts";
import { LABEL } from "../runtime.ts";
import { runtimeContract } from "../../testing/runtime-contract.ts";
import { portForwardContract } from "../../testing/port-forward-contract.ts";
import { testContainerConfig, testSandboxConfig } from "../../testing/cri-configs.ts";
import { join } from "node:path";

describeOnContainerd("CRI runtime", (services, endpoint, version) => {
  const podLogsDir = join(services.dir, "pod-logs");
  const client = createCriClient({ runtimeEndpoint: endpoint, requestTimeoutMs: 10_000 });
  afterAll(() => client.close());
  const make = () => createCriRuntime(client, { relistPeriodMs: 100, clock: systemClock });
  runtimeContract("CRI runtime contract", make, {
    image: services.busybox,
    prefix: `cri${version.replace(".", "")}-`,
    logDirectory: podLogsDir,
  });
  portForwardContract("CRI port forward", make, { image: services.busybox, prefix: `cri${version.replace(".", "")}-` });

  describe("what only the CRI shows", () => {
    const runtime = make();
    const sandboxes: string[] = [];
    afterAll(async () => {
      for (const id of sandboxes) await runtime.removePodSandbox(id);
    });

    test("names containerd's own sandbox image (its sandbox_image, from the verbose Status), and reports no pull progress", async () => {
      expect((await runtime.status()).sandboxImage).toBe("docker.io/local/cri-pause:latest");
      expect(runtime.reportsPullProgress).toBe(false);
    });

    test("never lists sandboxes and containers the kubelet did not create", async () => {
      const id = await client.runPodSandbox({
        metadata: { name: "stranger", namespace: "default", uid: `stranger-${Date.now()}`, attempt: 0 },
        hostname: "stranger",
        log_directory: join(podLogsDir, "stranger"),
        labels: { [LABEL.podUid]: "stranger" },
        linux: { security_context: { namespace_options: { network: "POD", pid: "CONTAINER", ipc: "POD" } } },
      });
      sandboxes.push(id);
      expect((await runtime.listPodSandboxes()).some((s) => s.id === id)).toBe(false);
    });

    test("answers a bad endpoint with an error naming the socket", async () => {
      const missing = join(services.dir, "no-such.sock");
      const bad = createCriClient({ runtimeEndpoint: `unix://${missing}`, requestTimeoutMs: 2000 });
      expect(await bad.version().catch((e: unknown) => e)).toMatchObject({
        code: "RuntimeUnavailable",
        message: expect.stringContaining(missing),
      });
      bad.close();
      const docker = createCriClient({ runtimeEndpoint: services.dockerHost, requestTimeoutMs: 2000 });
      expect(await docker.version().catch((e: unknown) => e)).toMatchObject({
        code: "RuntimeUnavailable",
        message: expect.stringContaining(`something answered at ${services.dockerHost}, but not with gRPC`),
      });
      docker.close();
    });

    test("names the runtime in a sandbox's status, the scheme of containerd://… IDs", async () => {
      const id = await runtime.runPodSandbox(testSandboxConfig(`named-${Date.now()}`, "named"));
      sandboxes.push(id);
      expect((await runtime.podSandboxStatus(id)).runtimeName).toBe("containerd");
    });

    test("reads running containers' CPU and memory through ListContainerStats, alone or many at once", async () => {
      const uid = `stats-${Date.now()}`;
      const sandbox = testSandboxConfig(uid, "stats", { logDirectory: join(podLogsDir, uid) });
      const sandboxId = await runtime.runPodSandbox(sandbox);
      sandboxes.push(sandboxId);
      const ids: string[] = [];
      for (const name of ["one", "two"]) {
        const config = testContainerConfig(sandbox, name, 0, services.busybox, ["sleep", "3600"]);
        const id = await runtime.createContainer(sandboxId, config, sandbox);
        await runtime.startContainer(id);
        ids.push(id);
      }
      const alone = await runtime.stats(ids[0]!);
      const together = await Promise.all(ids.map((id) => runtime.stats(id)));
      for (const s of [alone, ...together]) {
        expect(s.memoryWorkingSetBytes).toBeGreaterThan(0);
        expect(Date.parse(s.time)).toBeGreaterThan(Date.now() - 60_000);
      }
      expect(together[0]!.cpuUsageNanoseconds).toBeGreaterThanOrEqual(alone.cpuUsageNanoseconds);
      expect(await runtime.stats("0".repeat(64)).catch((e) => e.code)).toBe("NotFound");
    });

    test("names containers the dockershim way for every layer above", async () => {
      const listed = await runtime.listContainers();
      for (const c of listed) expect(c.name).toMatch(/^k8s_[^_]+_[^_]+_[^_]+_[^_]+_\d+$/);
    });
  });
});
