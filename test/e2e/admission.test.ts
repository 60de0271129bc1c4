// What a node admits and how it pulls, end to end on the compiled binary and the real dockerd:
// --max_pods (OutOfpods, oldest kept), the host-namespace sources (CapabilitiesForbidden),
// spec.nodeName, the cgroup driver taken from Docker (and a mismatch refused), and a stalled
// registry pull cancelled after --image_pull_progress_deadline while other pods keep starting.
import { afterAll, beforeAll, expect } from "bun:test";
import { unlinkSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { describeWithServices } from "../../lib/testing/services.ts";
import { type Kubelet, killKubeletsAfterAll, startKubelet, test, waitFor } from "./harness-kubelet.ts";
import {
  baseFlags,
  docker,
  podContainers,
  removeCgroupRoot,
  removeDir,
  removePods,
  runBinary,
  tempDir,
} from "./harness.ts";

interface ReportedPod {
  metadata: { name: string };
  spec: { nodeName?: string };
  status?: {
    phase?: string;
    reason?: string;
    message?: string;
    containerStatuses?: Array<{
      name: string;
      state?: { running?: object; waiting?: { reason?: string; message?: string } };
    }>;
  };
}
interface ReportedEvent {
  reason: string;
  type: string;
  message: string;
  count: number;
  involvedObject: { name: string };
}

const manifest = (dir: string, name: string, spec: string, created?: string) =>
  writeFileSync(
    join(dir, `${name}.yaml`),
    `apiVersion: v1
kind: Pod
metadata: { name: ${name}${created ? `, creationTimestamp: "${created}"` : ""} }
spec:
  terminationGracePeriodSeconds: 1
${spec}`,
  );

describeWithServices("admission on a real node", (services) => {
  const manifests = tempDir("admit-manifests");
  const rootDir = tempDir("admit-root");
  const pods = ["e2e-admit-old", "e2e-admit-mid", "e2e-admit-new", "e2e-admit-hostnet"];
  const app = `  containers: [{ name: app, image: "${services.busybox}", command: ["sleep", "3600"] }]\n`;
  let kubelet: Kubelet;
  const api = async <T>(path: string) => (await (await kubelet.api(path)).json()) as T;
  const reported = async (name: string) =>
    (await api<{ items: ReportedPod[] }>("/pods")).items.find((p) => p.metadata.name === name);
  const running = (name: string) =>
    podContainers(services, name).some(
      (c) => c.labels["io.kubernetes.container.name"] === "app" && c.state === "running",
    );

  beforeAll(async () => {
    manifest(manifests, "e2e-admit-old", app, "2026-01-01T00:00:00Z");
    manifest(manifests, "e2e-admit-mid", app, "2026-01-02T00:00:00Z");
    manifest(manifests, "e2e-admit-new", app, "2026-01-03T00:00:00Z");
    manifest(manifests, "e2e-admit-hostnet", `  hostNetwork: true\n${app}`, "2025-12-01T00:00:00Z");
    kubelet = await startKubelet([
      "run",
      "-c",
      manifests,
      ...baseFlags(services, rootDir),
      "--hostname_override",
      "e2e-admit-node",
      "--max_pods",
      "2",
      "--host_network_sources",
      "url,etcd",
    ]);
    await waitFor(
      "the two oldest pods running",
      () => running("e2e-admit-old") && running("e2e-admit-mid"),
      60_000,
    ).catch((error: Error) => {
      throw new Error(`${error.message}\n${kubelet.output}`);
    });
  });

  killKubeletsAfterAll();
  afterAll(() => {
    removePods(services, ...pods);
    removeCgroupRoot(rootDir);
    removeDir(manifests);
    removeDir(rootDir);
  });

  test("the pod beyond --max_pods is Failed with OutOfpods and a Warning event, and has no container", async () => {
    const newest = await waitFor("the newest pod rejected", async () => {
      const pod = await reported("e2e-admit-new");
      return pod?.status?.reason === "OutOfpods" ? pod : undefined;
    });
    expect(newest.status).toMatchObject({
      phase: "Failed",
      message: "Pod was rejected: Node didn't have enough resource: pods, requested: 1, used: 2, capacity: 2",
    });
    const events = await api<{ items: ReportedEvent[] }>("/events");
    expect(events.items.find((e) => e.involvedObject.name === "e2e-admit-new")).toMatchObject({
      type: "Warning",
      reason: "OutOfpods",
    });
    expect(podContainers(services, "e2e-admit-new")).toEqual([]);
  });

  test("a hostNetwork pod from a source not in --host_network_sources is CapabilitiesForbidden", async () => {
    const pod = await waitFor("the hostNetwork pod rejected", async () => {
      const found = await reported("e2e-admit-hostnet");
      return found?.status?.reason === "CapabilitiesForbidden" ? found : undefined;
    });
    expect(pod.status?.message).toContain("specified host networking, but is disallowed");
    expect(pod.status?.message).toContain("the file source is not in --host_network_sources (url,etcd)");
    expect(podContainers(services, "e2e-admit-hostnet")).toEqual([]);
  });

  test("every pod in /pods carries spec.nodeName, the node's name", async () => {
    const { items } = await api<{ items: ReportedPod[] }>("/pods");
    expect(items.length).toBe(4);
    expect(new Set(items.map((p) => p.spec.nodeName))).toEqual(new Set(["e2e-admit-node"]));
  });

  test("the pods are placed with the cgroup driver Docker reports", () => {
    expect(kubelet.output).toContain("cgroupfs driver, the container runtime's");
  });

  test("when an admitted pod's manifest is deleted, the pod refused for room starts", async () => {
    expect((await reported("e2e-admit-new"))?.status?.reason).toBe("OutOfpods");
    unlinkSync(join(manifests, "e2e-admit-old.yaml"));
    await waitFor("the refused pod running", () => running("e2e-admit-new"), 60_000);
    expect((await reported("e2e-admit-new"))?.status?.phase).toBe("Running");
  }, 90_000);

  test("a --cgroup_driver different from Docker's refuses to start, naming both", () => {
    const other = tempDir("admit-driver");
    const result = runBinary(
      ["run", "-c", other, ...baseFlags(services, other), "--enable_server=false", "--cgroup_driver", "systemd"],
      { timeoutMs: 30_000 },
    );
    removeDir(other);
    expect(result.code).toBe(1);
    expect(result.stdout + result.stderr).toContain(
      'misconfiguration: kubelet cgroup driver: \\"systemd\\" is different from docker cgroup driver: \\"cgroupfs\\"',
    );
  });
});

describeWithServices("a stalled image pull", (services) => {
  const manifests = tempDir("stall-manifests");
  const rootDir = tempDir("stall-root");
  const pods = ["e2e-stall-stuck", "e2e-stall-local", "e2e-stall-pulled"];
  const pulled = `${services.registry}/stall/pulled${Date.now()}:1`;
  const requests: string[] = [];
  let registry: Server;
  let kubelet: Kubelet;
  const api = async <T>(path: string) => (await (await kubelet.api(path)).json()) as T;
  const running = (name: string) =>
    podContainers(services, name).some(
      (c) => c.labels["io.kubernetes.container.name"] === "app" && c.state === "running",
    );

  beforeAll(async () => {
    // A registry that answers /v2/ and then sends a manifest's headers and nothing more.
    registry = createServer((req, res) => {
      requests.push(`${req.method} ${req.url}`);
      if (req.url === "/v2/" || req.url === "/v2") {
        res.writeHead(200, { "Content-Type": "application/json", "Docker-Distribution-API-Version": "registry/2.0" });
        res.end("{}");
        return;
      }
      res.writeHead(200, {
        "Content-Type": "application/vnd.docker.distribution.manifest.v2+json",
        "Content-Length": "4096",
        "Docker-Distribution-API-Version": "registry/2.0",
      });
      res.flushHeaders();
    });
    await new Promise<void>((resolve) => registry.listen(0, "127.0.0.1", resolve));
    const stub = `127.0.0.1:${(registry.address() as AddressInfo).port}`;
    docker(services, "tag", services.busybox, pulled);
    docker(services, "push", pulled);
    docker(services, "rmi", pulled);
    const pod = (image: string) =>
      `  containers: [{ name: app, image: "${image}", imagePullPolicy: IfNotPresent, command: ["sleep", "3600"] }]\n`;
    manifest(manifests, "e2e-stall-stuck", pod(`${stub}/stall/app:1`), "2026-01-01T00:00:00Z");
    manifest(manifests, "e2e-stall-local", pod(services.busybox), "2026-01-02T00:00:00Z");
    kubelet = await startKubelet([
      "run",
      "-c",
      manifests,
      ...baseFlags(services, rootDir),
      "--image_pull_progress_deadline",
      "3s",
    ]);
  });

  killKubeletsAfterAll();
  afterAll(() => {
    registry?.closeAllConnections();
    registry?.close();
    removePods(services, ...pods);
    try {
      docker(services, "rmi", pulled);
    } catch {
      // not pulled: nothing to remove
    }
    removeCgroupRoot(rootDir);
    removeDir(manifests);
    removeDir(rootDir);
  });

  test("the pull is cancelled after the deadline as ErrImagePull, retried with back-off, and other pods keep starting", async () => {
    await waitFor("the pod with a local image running", () => running("e2e-stall-local"), 60_000);
    await waitFor("the stub registry asked for the manifest", () => requests.some((r) => r.includes("/manifests/")));
    // Pulls are serialized: this pod's pull waits behind the stalled one until the deadline frees the slot.
    manifest(
      manifests,
      "e2e-stall-pulled",
      `  containers: [{ name: app, image: "${pulled}", command: ["sleep", "3600"] }]\n`,
    );
    const failed = await waitFor(
      "the stalled pull cancelled",
      async () =>
        (await api<{ items: ReportedEvent[] }>("/events")).items.find(
          (e) => e.involvedObject.name === "e2e-stall-stuck" && e.reason === "Failed",
        ),
      30_000,
    );
    expect(failed.message).toContain("because of no progress for 3s");
    await waitFor("the pod pulled after the stalled one running", () => running("e2e-stall-pulled"), 60_000);
    const stuck = (await api<{ items: ReportedPod[] }>("/pods")).items.find(
      (p) => p.metadata.name === "e2e-stall-stuck",
    );
    expect(stuck?.status?.containerStatuses?.[0]?.state?.waiting?.reason).toMatch(/^(ErrImagePull|ImagePullBackOff)$/);
    // The image's back-off is 10 s: a second attempt follows, and is cancelled the same way.
    await waitFor(
      "a second, cancelled attempt",
      async () =>
        (await api<{ items: ReportedEvent[] }>("/events")).items.some(
          (e) => e.involvedObject.name === "e2e-stall-stuck" && e.reason === "Failed" && e.count >= 2,
        ),
      40_000,
    );
  }, 150_000);
});
