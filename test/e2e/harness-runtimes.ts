// The end-to-end runtime matrix: KUBELET_TEST_RUNTIME=docker|remote|remote-1.7 (or a comma list) picks runtimes,
// unset runs every suite on all three: Docker, containerd 1.6 (relisted) and containerd 1.7 (its event stream). Tests observe containers through the kubelet's own Runtime port (the Docker
// adapter or the CRI one, built by the same factories as the composition root), so one assertion
// holds on either runtime.
import { afterAll, test } from "bun:test";
import { createCriClient } from "../../lib/container/cri/cri-client.ts";
import { createCriRuntime } from "../../lib/container/cri/cri.ts";
import { createDockerRuntime } from "../../lib/container/docker/docker.ts";
import { type ContainerSummary, LABEL, type PodSandboxSummary, type Runtime } from "../../lib/container/runtime.ts";
import { systemClock } from "../../lib/clock.ts";
import { describeWithServices, type TestServices } from "../../lib/testing/services.ts";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { type Kubelet, killKubeletsAfterAll, startKubelet, waitFor } from "./harness-kubelet.ts";
import { removeDir, tempDir } from "./harness.ts";

export type RuntimeKind = "docker" | "remote";
/** One entry of the matrix: Docker, or the CRI on containerd 1.6 ("remote") or on 1.7 ("remote-1.7"). */
export type MatrixRuntime = RuntimeKind | "remote-1.7";
const MATRIX: MatrixRuntime[] = ["docker", "remote", "remote-1.7"];

/** A runtime the suite runs on, with the flags that select it and a view of its containers. */
export interface RuntimeUnderTest {
  kind: RuntimeKind;
  /** "docker" or "containerd": the scheme of container IDs. */
  label: string;
  /** How describe blocks are named: "docker", "containerd" (1.6) or "containerd 1.7". */
  name: string;
  /** The CRI socket (containerd 1.6's or 1.7's); the Docker socket on Docker. */
  endpoint: string;
  /** The kubelet's Runtime port on the same daemon the kubelet under test drives. */
  runtime: Runtime;
  /** Flags every test kubelet gets: this runtime, no bridge network, a private root dir and cgroup root. */
  flags(rootDir: string): string[];
  /** `run -c <manifests>` with those flags and the test pause image. */
  runFlags(manifests: string, rootDir: string): string[];
  /** The kubelet's containers of a pod, running and dead. */
  podContainers(pod: string, namespace?: string): Promise<ContainerSummary[]>;
  /** The running container named `container` of a pod, if any. */
  running(pod: string, container: string, namespace?: string): Promise<ContainerSummary | undefined>;
  /** The kubelet's sandboxes of a pod, ready and not. */
  podSandboxes(pod: string, namespace?: string): Promise<PodSandboxSummary[]>;
  /** The ready sandbox of a pod, if any. */
  readySandbox(pod: string, namespace?: string): Promise<PodSandboxSummary | undefined>;
  /** Removes every container and sandbox of the given pods (test clean-up). */
  removePods(...pods: string[]): Promise<void>;
  /** Closes the connection to the runtime. */
  close(): void;
}

/** Which runtimes KUBELET_TEST_RUNTIME asks for, a comma list (unset or empty: all). */
export function matrixRuntimes(value = process.env.KUBELET_TEST_RUNTIME): MatrixRuntime[] {
  if (!value) return MATRIX;
  const asked = value.split(",").map((v) => v.trim());
  const wrong = asked.find((v) => !MATRIX.includes(v as MatrixRuntime));
  if (wrong !== undefined)
    throw new Error(
      `KUBELET_TEST_RUNTIME="${value}": "${wrong}" is none of docker, remote (containerd 1.6), remote-1.7 (containerd 1.7); give one or a comma list, or leave it unset for all`,
    );
  return MATRIX.filter((m) => asked.includes(m));
}

/** How a matrix runtime's describe blocks are named. */
const matrixName = (m: MatrixRuntime) => (m === "docker" ? "docker" : m === "remote" ? "containerd" : "containerd 1.7");

/** Flags of every test kubelet whatever its runtime: no bridge network, a private root dir and cgroup root. */
export function commonFlags(rootDir: string): string[] {
  return [
    "--pod_network_mode",
    "none",
    "--root_dir",
    rootDir,
    "--log_format",
    "json",
    "--healthz_port",
    "0",
    "--cgroup_root",
    testCgroupRoot(rootDir),
  ];
}

/** A cgroup root of the test's own, so test kubelets never share /kubepods with anything else. */
export function testCgroupRoot(rootDir: string): string {
  return `/kubelet-test/${rootDir.split("/").pop()}`;
}

/** The matrix runtime `which` on the test services (containerd 1.7 needs services.containerd17). */
export function runtimeUnderTest(services: TestServices, which: MatrixRuntime): RuntimeUnderTest {
  const kind: RuntimeKind = which === "docker" ? "docker" : "remote";
  const endpoint =
    which === "docker" ? services.dockerHost : which === "remote" ? services.containerd : services.containerd17;
  if (!endpoint) throw new Error("containerd 1.7 is not among the test services: run `bash scripts/services.sh up`");
  const client =
    kind === "remote" ? createCriClient({ runtimeEndpoint: endpoint, requestTimeoutMs: 30_000 }) : undefined;
  const runtime = client
    ? createCriRuntime(client, { clock: systemClock })
    : createDockerRuntime({ endpoint: services.dockerHost });
  const podContainers = async (pod: string, namespace = "default") =>
    (await runtime.listContainers()).filter(
      (c) => c.labels[LABEL.podName] === pod && c.labels[LABEL.podNamespace] === namespace,
    );
  const podSandboxes = async (pod: string, namespace = "default") =>
    (await runtime.listPodSandboxes()).filter((s) => s.metadata.name === pod && s.metadata.namespace === namespace);
  return {
    kind,
    label: kind === "docker" ? "docker" : "containerd",
    name: matrixName(which),
    endpoint,
    runtime,
    flags: (rootDir) => [
      ...commonFlags(rootDir),
      ...(kind === "docker"
        ? ["--docker_endpoint", services.dockerHost]
        : [
            "--container_runtime",
            "remote",
            "--container_runtime_endpoint",
            endpoint,
            "--pod_logs_dir",
            `${rootDir}/pod-logs`,
          ]),
    ],
    runFlags(manifests, rootDir) {
      return ["run", "-c", manifests, ...this.flags(rootDir), "--network_container_image", services.pause];
    },
    podContainers,
    podSandboxes,
    async running(pod, container, namespace) {
      return (await podContainers(pod, namespace)).find(
        (c) => c.labels[LABEL.containerName] === container && c.state === "CONTAINER_RUNNING",
      );
    },
    async readySandbox(pod, namespace) {
      return (await podSandboxes(pod, namespace)).find((s) => s.state === "ready");
    },
    async removePods(...pods) {
      // Containers before their sandbox: the CRI removes a sandbox only once it is stopped, and a start a
      // killed kubelet asked for may still be in flight ("container is in starting state"): retry.
      for (const c of (await Promise.all(pods.map((p) => podContainers(p)))).flat())
        await waitFor(`removal of ${c.name}`, async () => {
          await runtime.stopContainer(c.id, 0);
          await runtime.removeContainer(c.id);
          return true;
        });
      for (const s of (await Promise.all(pods.map((p) => podSandboxes(p)))).flat())
        await waitFor(`removal of the sandbox of ${s.metadata.name}`, async () => {
          await runtime.stopPodSandbox(s.id);
          await runtime.removePodSandbox(s.id);
          return true;
        });
    },
    close: () => client?.close(),
  };
}

/**
 * `describe` once per runtime of the matrix (or of `only`), named "<name> [docker]" / "<name> [containerd]" /
 * "<name> [containerd 1.7]". Kubelets still running at the end of a block are killed. Without the services (or
 * that containerd) the block is skipped, except under CI=true, where it fails.
 */
export function describeOnRuntimes(
  name: string,
  fn: (services: TestServices, rt: RuntimeUnderTest) => void,
  only: MatrixRuntime[] = MATRIX,
): void {
  for (const which of matrixRuntimes().filter((m) => only.includes(m))) {
    describeWithServices(`${name} [${matrixName(which)}]`, (services) => {
      if (which === "remote-1.7" && !services.containerd17) return missingContainerd17();
      const rt = runtimeUnderTest(services, which);
      fn(services, rt);
      // Declared last, so they run after the block's own clean-up (which may still use the runtime).
      killKubeletsAfterAll();
      afterAll(() => rt.close());
    });
  }
}

/** No containerd 1.7 among the services: skipped on a developer's machine, a failure under CI=true. */
function missingContainerd17(): void {
  const why = "containerd 1.7 is not among the test services: run `bash scripts/services.sh up`";
  if (process.env.CI === "true")
    test("has containerd 1.7 among the test services", () => {
      throw new Error(`${why} (CI=true forbids skipping)`);
    });
  else test.skip(why, () => {});
}

/** Writes the pod `name` with `spec` into `dir` as a manifest (JSON, which the file source reads as the YAML it is). */
export function writePod(dir: string, name: string, spec: Record<string, unknown>): void {
  writeFileSync(join(dir, `${name}.yaml`), JSON.stringify({ apiVersion: "v1", kind: "Pod", metadata: { name }, spec }));
}

/** A node of static pods for one describe block on the runtime under test (see staticPodNode). */
export interface StaticPodNode {
  manifests: string;
  rootDir: string;
  /** Writes the pod `name` with `spec` into the manifest directory (JSON, which the file source reads as YAML). */
  write(name: string, spec: Record<string, unknown>): void;
  /** Starts `kubelet run -c <manifests>` on the runtime, with the test pause image and `extra` flags. */
  start(extra?: string[]): Promise<Kubelet>;
}

/**
 * A manifest directory and root dir of the block's own and a `run` kubelet over them; after the block the kubelet
 * is killed, `pods` are removed from the runtime and both directories deleted. Call it inside the describe block.
 */
export function staticPodNode(
  prefix: string,
  services: TestServices,
  rt: RuntimeUnderTest,
  pods: string[],
): StaticPodNode {
  const manifests = tempDir(`${prefix}-manifests`);
  const rootDir = tempDir(`${prefix}-root`);
  let kubelet: Kubelet | undefined;
  afterAll(async () => {
    await kubelet?.stop("SIGKILL");
    await rt.removePods(...pods);
    removeDir(manifests);
    removeDir(rootDir);
  });
  return {
    manifests,
    rootDir,
    write: (name, spec) => writePod(manifests, name, spec),
    start: async (extra = []) =>
      (kubelet = await startKubelet([
        "run",
        "-c",
        manifests,
        ...rt.flags(rootDir),
        "--network_container_image",
        services.pause,
        ...extra,
      ])),
  };
}
