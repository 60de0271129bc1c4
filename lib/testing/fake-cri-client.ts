// A recording in-memory runtime.v1 client for unit tests of the CRI runtime: sandboxes and containers
// live in maps, every call is recorded by its gRPC method name, so a test can count what a relist or a
// stats collection costs in calls. Images, exec and logs are not modelled: those calls reject.
import { runtimeError } from "../container/runtime.ts";
import type {
  ContainerConfig,
  CriClient,
  CriContainer,
  CriContainerState,
  CriContainerStats,
  PodSandbox,
  PodSandboxConfig,
} from "../container/cri-types.ts";
import type { LinuxResources } from "../container/runtime.ts";

export interface FakeCriClient extends CriClient {
  /** gRPC method names in call order ("ListContainerStats by id" for a list filtered to one container). */
  readonly calls: string[];
  /** Sets a container's state as the runtime would after an exit or a start outside the kubelet. */
  setState(id: string, state: CriContainerState): void;
}

const matches = (labels: Record<string, string>, selector: Record<string, string> = {}) =>
  Object.entries(selector).every(([k, v]) => labels[k] === v);

export function createFakeCriClient(): FakeCriClient {
  const calls: string[] = [];
  const sandboxes = new Map<string, PodSandbox>();
  const containers = new Map<string, CriContainer>();
  /** Resources given by UpdateContainerResources, as ContainerStatus reports them back. */
  const resources = new Map<string, LinuxResources>();
  let next = 0;
  let time = 1_800_000_000_000_000_000;
  const record = (method: string) => void calls.push(method);
  const notFound = (method: string, id: string) => runtimeError("NotFound", `cannot ${method}: ${id} not found`);
  const unmodelled = (method: string) => () =>
    Promise.reject(runtimeError("RuntimeError", `cannot ${method}: not modelled by the fake CRI client`));
  const container = (method: string, id: string) => {
    record(method);
    const c = containers.get(id);
    if (!c) throw notFound(method, id);
    return c;
  };

  return {
    endpoint: "unix:///fake/cri.sock",
    calls,
    setState(id, state) {
      containers.set(id, { ...containers.get(id)!, state });
    },
    async version() {
      record("Version");
      return { runtime_name: "fake", runtime_version: "1.0", runtime_api_version: "v1" };
    },
    async status() {
      record("Status");
      return {
        conditions: [
          { type: "RuntimeReady", status: true, reason: "", message: "" },
          { type: "NetworkReady", status: true, reason: "", message: "" },
        ],
        // As containerd answers a verbose Status: its CRI config, with the sandbox image.
        info: { config: JSON.stringify({ sandboxImage: "registry.example/runtime-pause:1" }) },
      };
    },
    async runPodSandbox(config: PodSandboxConfig) {
      record("RunPodSandbox");
      const id = `sandbox-${++next}`;
      sandboxes.set(id, {
        id,
        metadata: config.metadata,
        state: "SANDBOX_READY",
        created_at: (time += 1e6),
        labels: config.labels ?? {},
        annotations: config.annotations ?? {},
      });
      return id;
    },
    async stopPodSandbox(id) {
      record("StopPodSandbox");
      const s = sandboxes.get(id);
      if (s) sandboxes.set(id, { ...s, state: "SANDBOX_NOTREADY" });
    },
    async removePodSandbox(id) {
      record("RemovePodSandbox");
      sandboxes.delete(id);
    },
    async podSandboxStatus(id) {
      record("PodSandboxStatus");
      const s = sandboxes.get(id);
      if (!s) throw notFound("PodSandboxStatus", id);
      return { ...s, network: null };
    },
    async listPodSandbox(filter = {}) {
      record("ListPodSandbox");
      return [...sandboxes.values()].filter(
        (s) =>
          (!filter.id || s.id === filter.id) &&
          (!filter.state || s.state === filter.state) &&
          matches(s.labels, filter.labelSelector),
      );
    },
    async createContainer(sandboxId: string, config: ContainerConfig) {
      record("CreateContainer");
      if (!sandboxes.has(sandboxId)) throw notFound("CreateContainer", sandboxId);
      const id = `container-${++next}`;
      containers.set(id, {
        id,
        pod_sandbox_id: sandboxId,
        metadata: config.metadata,
        image: { image: config.image.image },
        image_ref: `sha256:${config.image.image}`,
        state: "CONTAINER_CREATED",
        created_at: (time += 1e6),
        labels: config.labels ?? {},
        annotations: config.annotations ?? {},
      });
      return id;
    },
    async startContainer(id) {
      container("StartContainer", id);
      containers.set(id, { ...containers.get(id)!, state: "CONTAINER_RUNNING" });
    },
    async stopContainer(id) {
      container("StopContainer", id);
      containers.set(id, { ...containers.get(id)!, state: "CONTAINER_EXITED" });
    },
    async updateContainerResources(id, linux) {
      container("UpdateContainerResources", id);
      resources.set(id, linux);
    },
    async removeContainer(id) {
      record("RemoveContainer");
      containers.delete(id);
    },
    async listContainers(labelSelector) {
      record("ListContainers");
      return [...containers.values()].filter((c) => matches(c.labels, labelSelector));
    },
    async containerStatus(id) {
      const c = container("ContainerStatus", id);
      const linux = resources.get(id);
      return {
        ...c,
        started_at: 0,
        finished_at: 0,
        exit_code: 0,
        reason: "",
        message: "",
        log_path: "",
        ...(linux ? { resources: { linux } } : {}),
      };
    },
    async reopenContainerLog(id) {
      container("ReopenContainerLog", id);
    },
    async listContainerStats(filter = {}): Promise<CriContainerStats[]> {
      record(filter.id ? "ListContainerStats by id" : "ListContainerStats");
      if (filter.id && !containers.has(filter.id)) throw notFound("ListContainerStats", filter.id);
      // Usage grows with the container's place in creation order: the nth container used n µs and n × 4 KiB of
      // memory, and wrote n × 8 KiB to its writable layer.
      const ids = [...containers.keys()];
      return [...containers.values()]
        .filter((c) => c.state === "CONTAINER_RUNNING" && (!filter.id || c.id === filter.id))
        .map((c) => {
          const n = ids.indexOf(c.id) + 1;
          return {
            attributes: { id: c.id },
            cpu: { timestamp: time, usage_core_nano_seconds: { value: 1000 * n } },
            memory: { timestamp: time, working_set_bytes: { value: 4096 * n } },
            writable_layer: { used_bytes: { value: 8192 * n } },
          };
        });
    },
    execSync: unmodelled("ExecSync"),
    exec: unmodelled("Exec"),
    attach: unmodelled("Attach"),
    portForward: unmodelled("PortForward"),
    imageStatus: unmodelled("ImageStatus"),
    pullImage: unmodelled("PullImage"),
    listImages: unmodelled("ListImages"),
    removeImage: unmodelled("RemoveImage"),
    imageFsInfo: unmodelled("ImageFsInfo"),
    // containerd 1.6's answer: the CRI runtime then relists, as the generic PLEG does.
    async *containerEvents() {
      record("GetContainerEvents");
      throw runtimeError("Unimplemented", "unix:///fake/cri.sock does not serve GetContainerEvents");
    },
    close() {},
  };
}
