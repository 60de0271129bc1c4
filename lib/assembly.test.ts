// The one assembly: run, runonce and plan get the same store, admission, pod options and runtime decorators.
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { nodeUid, sourceUid } from "./api/pod-uid.ts";
import { assemble, type AssemblyCommand } from "./assembly.ts";
import { planOnce, runOnce } from "./kubelet.ts";
import { DEFAULT_CONFIG, type KubeletConfig } from "./config/config-types.ts";
import { NODE_LABEL } from "./container/node-scoped.ts";
import { silentLogger } from "./log.ts";
import { testSandboxConfig } from "./testing/cri-configs.ts";
import { FakeRuntime } from "./testing/fake-runtime.ts";

const COMMANDS: AssemblyCommand[] = ["run", "runonce", "plan"];

describe("assembly", () => {
  const dir = mkdtempSync(join(tmpdir(), "assembly-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(
    join(dir, "host.yaml"),
    JSON.stringify({
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name: "host" },
      spec: {
        hostNetwork: true,
        containers: [{ name: "c", image: "local/busybox:stable", securityContext: { privileged: true } }],
        volumes: [{ name: "etc", hostPath: { path: "/etc" } }],
      },
    }),
  );
  const config: KubeletConfig = {
    ...structuredClone(DEFAULT_CONFIG),
    config: dir,
    rootDir: join(dir, "root"),
    hostnameOverride: "Node-A",
    allowPrivileged: true,
    allowSensitiveHostPaths: true,
    maxPods: 7,
    hostNetworkSources: ["file"],
    hostPidSources: ["url"],
    hostIpcSources: ["*"],
    networkContainerImage: "local/pause:drift",
    podNetworkMode: "none",
    podLogsDir: join(dir, "logs"),
    runtimeRequestTimeout: 300,
    nodeLabels: { disk: "ssd" },
    runtimeHandlers: { fast: "runc" },
    seccompDefault: true,
  };

  test("every setting that affects admission or the runtime reaches run, runonce and plan alike", async () => {
    for (const command of COMMANDS) {
      const fake = new FakeRuntime();
      const opened: KubeletConfig[] = [];
      const assembly = await assemble(
        config,
        { command, log: silentLogger },
        { openRuntime: async (given) => (opened.push(given), { runtime: fake, description: "fake" }) },
      );
      await assembly.adoptRunningPods();
      await assembly.readSourcesOnce();
      // The store validates with --allow_privileged and --allow_sensitive_host_paths.
      expect({ command, pods: assembly.store.mergedState().map((p) => p.metadata.name) }).toEqual({
        command,
        pods: ["host"],
      });
      expect(assembly.store.rejected()).toEqual([]);
      expect(assembly.store.mergedState()[0]!.metadata.uid).toBe(nodeUid("node-a", "file", "default", "host"));
      expect(assembly.admission).toMatchObject({
        maxPods: 7,
        hostNetworkSources: ["file"],
        hostPidSources: ["url"],
        hostIpcSources: ["*"],
        node: { name: "node-a", labels: { disk: "ssd", "kubernetes.io/hostname": "node-a" } },
      });
      expect(assembly.podOptions).toMatchObject({
        hostname: "node-a",
        networkMode: "none",
        podLogsDir: join(dir, "logs"),
        allowPrivileged: true,
        seccomp: { seccompDefault: true },
        runtimeHandlers: { fast: "runc" },
      });
      expect(opened).toEqual([config]);
      // The decorators: sandboxes are labelled with the node, and runtime calls are counted.
      await assembly.runtime.runPodSandbox(testSandboxConfig("u1", "web"));
      const [sandbox] = await fake.listPodSandboxes();
      expect(sandbox!.labels[NODE_LABEL]).toBe("node-a");
      expect(assembly.metrics.render()).toContain(
        'kubelet_runtime_operations_total{operation_type="run_podsandbox"} 1',
      );
    }
  });

  test("a pod the runtime still runs under its earlier, node-less UID keeps it in run, runonce and plan", async () => {
    for (const command of COMMANDS) {
      const fake = new FakeRuntime();
      await fake.runPodSandbox(testSandboxConfig(sourceUid("file", "default", "host"), "host"));
      const assembly = await assemble(
        config,
        { command, log: silentLogger },
        { openRuntime: async () => ({ runtime: fake, description: "fake" }) },
      );
      await assembly.adoptRunningPods();
      await assembly.readSourcesOnce();
      expect({ command, uid: assembly.store.mergedState()[0]!.metadata.uid }).toEqual({
        command,
        uid: sourceUid("file", "default", "host"),
      });
    }
  });

  test("runonce and plan refuse what the sync would refuse: a hostNetwork pod from a source not in --host_network_sources", async () => {
    const refusing = { ...config, hostNetworkSources: ["url"], cgroupsPerQos: false, enforceNodeAllocatable: ["none"] };
    const openRuntime = async () => ({ runtime: new FakeRuntime(), description: "fake" });
    const { plan } = await planOnce(refusing, { log: silentLogger }, { openRuntime });
    expect(plan.pods.map((p) => [p.pod, p.actions.map((a) => a.reason.split(":")[0])])).toEqual([
      ["default/host", ["CapabilitiesForbidden"]],
    ]);
    expect(plan.changes).toBe(false);
    let printed = "";
    const out = new Writable({ write: (chunk, _encoding, done) => ((printed += chunk), done()) });
    const ok = await runOnce(
      refusing,
      { log: silentLogger, signal: new AbortController().signal, out, tty: false },
      { openRuntime },
    );
    expect(ok).toBe(false);
    expect(printed).toContain("default/host: CapabilitiesForbidden");
  });

  test("until the runtime has said which pods it runs, every pod keeps its earlier, node-less UID", async () => {
    const assembly = await assemble(
      config,
      { command: "run", log: silentLogger },
      { openRuntime: async () => ({ runtime: new FakeRuntime(), description: "fake" }) },
    );
    await assembly.readSourcesOnce();
    expect(assembly.store.mergedState()[0]!.metadata.uid).toBe(sourceUid("file", "default", "host"));
  });

  test("--runtime_request_timeout bounds the runtime calls of run, runonce and plan, on Docker and on a CRI runtime", async () => {
    const socket = join(dir, "silent.sock");
    const server: Server = createServer(() => {});
    await new Promise<void>((resolve) => server.listen(socket, resolve));
    const runtimes: Array<[Partial<KubeletConfig>, RegExp]> = [
      [{ containerRuntime: "docker", dockerEndpoint: `unix://${socket}` }, /did not answer within 300 ms/],
      [
        { containerRuntime: "remote", containerRuntimeEndpoint: `unix://${socket}` },
        /Deadline exceeded after 0\.(29|3)\d*s/,
      ], // gRPC may report 0.297s for its 300 ms deadline
    ];
    try {
      for (const command of COMMANDS)
        for (const [settings, message] of runtimes) {
          const assembly = await assemble({ ...config, ...settings }, { command, log: silentLogger });
          // then(), not expect().rejects: Bun would wait on gRPC's unreferenced socket past the deadline.
          const error = await assembly.runtime.version().then(
            () => undefined,
            (e: Error) => e,
          );
          expect({ command, runtime: settings.containerRuntime, message: error?.message }).toEqual({
            command,
            runtime: settings.containerRuntime,
            message: expect.stringMatching(message),
          });
        }
    } finally {
      server.close();
    }
  });

  test("runonce reads the manifests while the runtime lists the running pods, and applies them after: a running pod keeps its UID", async () => {
    const pod = {
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name: "web" },
      spec: { containers: [{ name: "c", image: "local/busybox:stable" }] },
    };
    const requested = Promise.withResolvers<void>();
    const server = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      fetch: () => (requested.resolve(), new Response(JSON.stringify(pod))),
    });
    /** A runtime whose list of sandboxes answers once the manifest URL was read, or after 5 s. */
    class ListAfterRead extends FakeRuntime {
      readFirst: boolean | undefined;
      override async listPodSandboxes(...args: Parameters<FakeRuntime["listPodSandboxes"]>) {
        let timer: ReturnType<typeof setTimeout> | undefined;
        this.readFirst ??= await Promise.race([
          requested.promise.then(() => true),
          new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), 5_000))),
        ]);
        clearTimeout(timer);
        return super.listPodSandboxes(...args);
      }
    }
    const fake = new ListAfterRead();
    await fake.runPodSandbox(testSandboxConfig(sourceUid("url", "default", "web"), "web"));
    const out = new Writable({ write: (_chunk, _encoding, done) => done() });
    try {
      const ok = await runOnce(
        {
          ...config,
          config: "",
          manifestUrl: `http://127.0.0.1:${server.port}/pod.json`,
          rootDir: join(dir, "root-url"),
          cgroupsPerQos: false,
          enforceNodeAllocatable: ["none"],
        },
        { log: silentLogger, signal: new AbortController().signal, out, tty: false },
        { openRuntime: async () => ({ runtime: fake, description: "fake" }) },
      );
      expect(fake.readFirst).toBe(true);
      expect(ok).toBe(true);
      const sandboxes = await fake.listPodSandboxes();
      expect(new Set(sandboxes.map((s) => s.metadata.uid))).toEqual(new Set([sourceUid("url", "default", "web")]));
    } finally {
      server.stop(true);
    }
  });
});
