// A runtime.v1 client on a unix socket, over gRPC on node:http2 (grpc-h2.ts) and the generated message tables
// (cri-schema.ts, encoded by cri-codec.ts). Loaded with a dynamic import by the composition root only when
// --container_runtime is remote, so `kubelet --version` and Docker mode never pay for the tables.
import { KubeletError } from "../../api/types.ts";
import { createCriCodecs, type MessageCodec } from "./cri-codec.ts";
import { createListDecoder } from "./cri-list-decoder.ts";
import { CRI_SCHEMA } from "./cri-schema.ts";
import type { CriClient, CriContainerEvent } from "../cri-types.ts";
import { createGrpcChannel, type GrpcChannel, type GrpcError, GrpcStatus } from "./grpc-h2.ts";
import { runtimeError } from "../runtime.ts";
import { grpcConnectionCause, unreachableFix } from "../unreachable.ts";

export interface CriClientOptions {
  /** `unix:///run/containerd/containerd.sock` (a bare path is accepted too). */
  runtimeEndpoint: string;
  /** Defaults to the runtime endpoint. */
  imageEndpoint?: string;
  /** --runtime_request_timeout: the deadline of every call but image pulls. */
  requestTimeoutMs: number;
}

/** `unix:///x` or `/x` → the unix:// address the client connects to; anything else is refused with the fix. */
export function criAddress(endpoint: string, flag: string): string {
  if (endpoint.startsWith("unix://")) return endpoint;
  if (endpoint.startsWith("/")) return `unix://${endpoint}`;
  throw new KubeletError(
    "InvalidEndpoint",
    `${flag} "${endpoint}": only unix sockets are supported; use unix:///run/containerd/containerd.sock`,
  );
}

/** One method: its path, how its request is encoded and its answer decoded. */
interface Method {
  path: string;
  encode(value: object): Uint8Array;
  decode(bytes: Buffer): any;
}
let methods: Map<string, Method> | undefined;

/**
 * The two services' methods, from the tables of cri-schema.ts (generated from cri-proto.ts when it changes): start-up
 * parses no .proto text. A message's codec is built on the first call that uses it; the relist's two lists are
 * decoded item by item, unchanged items not again (cri-list-decoder.ts).
 */
function loadMethods(): Map<string, Method> {
  if (methods) return methods;
  const codecs = createCriCodecs(CRI_SCHEMA);
  const lists: Record<string, { itemType: string; field: string }> = {
    ListContainers: { itemType: "Container", field: "containers" },
    ListPodSandbox: { itemType: "PodSandbox", field: "items" },
  };
  const listDecoder = (method: string, { itemType, field }: { itemType: string; field: string }) => {
    const item = codecs.codec(itemType);
    const items = createListDecoder(item.decode, {
      field: codecs.fieldId(`${method}Response`, field),
      version: [codecs.fieldId(itemType, "id"), codecs.fieldId(itemType, "state")],
    });
    return (bytes: Buffer) => ({ [field]: items(bytes) });
  };
  methods = new Map();
  for (const serviceName of ["RuntimeService", "ImageService"]) {
    for (const [method, requestType, responseSpec] of CRI_SCHEMA.services[serviceName]!) {
      // "stream X": a server stream of X (GetContainerEvents).
      const responseType = responseSpec.replace(/^stream /, "");
      let request: MessageCodec | undefined;
      let response: MessageCodec | undefined;
      const list = lists[method];
      let decodeList: ((bytes: Buffer) => object) | undefined;
      methods.set(method, {
        path: `/runtime.v1.${serviceName}/${method}`,
        encode: (value) => (request ??= codecs.codec(requestType)).encode(value),
        decode: list
          ? (bytes) => (decodeList ??= listDecoder(method, list))(bytes)
          : (bytes) => (response ??= codecs.codec(responseType)).decode(bytes),
      });
    }
  }
  return methods;
}

const fixFor = (detail: string) => {
  const fix = unreachableFix(detail, { flag: "--container_runtime_endpoint", service: "containerd" });
  return fix ? `: ${fix}` : "";
};

/** Maps a gRPC status to the port's codes, naming the socket and what answered. */
function mapError(error: GrpcError, method: string, endpoint: string): KubeletError {
  const detail = grpcConnectionCause(error.details || error.message);
  if (error.code === GrpcStatus.UNAVAILABLE && /Protocol error/.test(detail))
    return runtimeError(
      "RuntimeUnavailable",
      `cannot ${method}: something answered at ${endpoint}, but not with gRPC over HTTP/2 (a Docker socket? use --container_runtime docker with --docker_endpoint): ${detail}`,
      { cause: error },
    );
  if (error.code === GrpcStatus.UNAVAILABLE || error.code === GrpcStatus.DEADLINE_EXCEEDED)
    return runtimeError(
      "RuntimeUnavailable",
      `cannot ${method}: the container runtime at ${endpoint} did not answer: ${detail}${fixFor(detail)}`,
      { cause: error },
    );
  if (error.code === GrpcStatus.UNIMPLEMENTED)
    return runtimeError(
      "RuntimeUnavailable",
      `cannot ${method}: ${endpoint} answered but does not serve runtime.v1 (${detail}); is it a CRI runtime with the CRI plugin enabled?`,
      { cause: error },
    );
  if (error.code === GrpcStatus.NOT_FOUND || /not found|does not exist/i.test(detail))
    return runtimeError("NotFound", `cannot ${method}: ${detail}`, { cause: error });
  // containerd answers Unknown for a container in the wrong state; the port calls that a conflict, as Docker's 409.
  if (error.code === GrpcStatus.FAILED_PRECONDITION || /is in CONTAINER_\w+ state|is not running/.test(detail))
    return runtimeError("Conflict", `cannot ${method}: ${detail}`, { cause: error });
  if (error.code === GrpcStatus.CANCELLED)
    return runtimeError("Aborted", `cannot ${method}: cancelled`, { cause: error });
  return runtimeError("RuntimeError", `cannot ${method}: ${detail}`, { cause: error });
}

/** Opens (lazily: the first call connects) a runtime.v1 client on the given sockets. */
export function createCriClient(options: CriClientOptions): CriClient {
  const runtimeAddress = criAddress(options.runtimeEndpoint, "--container_runtime_endpoint");
  const imageAddress = criAddress(options.imageEndpoint || options.runtimeEndpoint, "--image_service_endpoint");
  const methods = loadMethods();
  // One connection a socket, as grpc-js's shared subchannels had: the image service is most often the same one.
  const channel = (address: string) =>
    createGrpcChannel({ path: address.slice("unix://".length), maxReceiveMessageBytes: 16 * 1024 * 1024 });
  const runtimeChannel = channel(runtimeAddress);
  const channels: Record<"runtime" | "image", GrpcChannel> = {
    runtime: runtimeChannel,
    image: imageAddress === runtimeAddress ? runtimeChannel : channel(imageAddress),
  };

  const call = async <T>(
    service: "runtime" | "image",
    method: string,
    request: object,
    limits: { timeoutMs?: number | null; signal?: AbortSignal } = {},
  ): Promise<T> => {
    const address = service === "runtime" ? runtimeAddress : imageAddress;
    const m = methods.get(method)!;
    const timeoutMs = limits.timeoutMs === undefined ? options.requestTimeoutMs : limits.timeoutMs;
    try {
      const answer = await channels[service].unary(m.path, m.encode(request), {
        deadline: timeoutMs === null ? undefined : Date.now() + timeoutMs,
        signal: limits.signal,
      });
      return m.decode(answer) as T;
    } catch (error) {
      throw error instanceof Error && "code" in error && typeof error.code === "number"
        ? mapError(error as GrpcError, method, address)
        : error;
    }
  };
  /**
   * A server stream as an async iterable: opened once the connection is up (so a runtime that is down fails here,
   * as a unary call would), `opened` told then; the call is cancelled when the signal aborts or the reader stops.
   */
  async function* rtStream<T>(method: string, request: object, signal: AbortSignal, opened?: () => void) {
    const m = methods.get(method)!;
    try {
      await runtimeChannel.ready();
    } catch (error) {
      // A stop does not wait out a runtime that is away.
      if (signal.aborted) return;
      throw runtimeError(
        "RuntimeUnavailable",
        `cannot ${method}: the container runtime at ${runtimeAddress} did not answer: ${(error as GrpcError).details}`,
      );
    }
    if (signal.aborted) return;
    const messages = runtimeChannel.serverStream(m.path, m.encode(request), { signal });
    opened?.();
    try {
      for await (const message of messages) yield m.decode(message) as T;
      // A runtime that goes away may end the stream without an error: the reader must hear of it all the same.
      if (!signal.aborted)
        throw runtimeError("RuntimeUnavailable", `${method} from ${runtimeAddress}: the stream ended`);
    } catch (error) {
      if (signal.aborted) return;
      const cause = error as GrpcError;
      if (cause.code === GrpcStatus.UNIMPLEMENTED)
        throw runtimeError("Unimplemented", `${runtimeAddress} does not serve ${method}: ${cause.details}`, { cause });
      throw typeof cause.code === "number" ? mapError(cause, method, runtimeAddress) : error;
    }
  }
  const rt = <T>(method: string, request: object, limits?: { timeoutMs?: number | null; signal?: AbortSignal }) =>
    call<T>("runtime", method, request, limits);
  const img = <T>(method: string, request: object, limits?: { timeoutMs?: number | null; signal?: AbortSignal }) =>
    call<T>("image", method, request, limits);

  return {
    endpoint: runtimeAddress,
    version: (signal) => rt("Version", { version: "v1" }, { signal }),
    // Verbose: containerd then adds its CRI plugin's config (with sandboxImage) to the answer's info.
    status: async (signal) => {
      const response = await rt<any>("Status", { verbose: true }, { signal });
      return { conditions: response.status?.conditions ?? [], info: response.info ?? {} };
    },
    runPodSandbox: async (config, runtimeHandler = "") =>
      (await rt<any>("RunPodSandbox", { config, runtime_handler: runtimeHandler })).pod_sandbox_id,
    stopPodSandbox: async (id) => void (await rt("StopPodSandbox", { pod_sandbox_id: id })),
    removePodSandbox: async (id) => void (await rt("RemovePodSandbox", { pod_sandbox_id: id })),
    podSandboxStatus: async (id) => (await rt<any>("PodSandboxStatus", { pod_sandbox_id: id })).status,
    listPodSandbox: async (filter = {}) =>
      (
        await rt<any>("ListPodSandbox", {
          filter: {
            id: filter.id ?? "",
            ...(filter.state ? { state: { state: filter.state } } : {}),
            label_selector: filter.labelSelector ?? {},
          },
        })
      ).items,
    createContainer: async (sandboxId, config, sandboxConfig) =>
      (await rt<any>("CreateContainer", { pod_sandbox_id: sandboxId, config, sandbox_config: sandboxConfig }))
        .container_id,
    startContainer: async (id) => void (await rt("StartContainer", { container_id: id })),
    // The runtime itself waits out the grace period: the deadline must outlast it.
    stopContainer: async (id, timeout) =>
      void (await rt(
        "StopContainer",
        { container_id: id, timeout },
        { timeoutMs: options.requestTimeoutMs + timeout * 1000 },
      )),
    removeContainer: async (id) => void (await rt("RemoveContainer", { container_id: id })),
    listContainers: async (labelSelector) =>
      (await rt<any>("ListContainers", { filter: labelSelector ? { label_selector: labelSelector } : null }))
        .containers,
    containerStatus: async (id) => (await rt<any>("ContainerStatus", { container_id: id })).status,
    updateContainerResources: async (id, linux) =>
      void (await rt("UpdateContainerResources", { container_id: id, linux })),
    // The CRI counts whole seconds; the call's own deadline keeps a sub-second timeout exact.
    execSync: (id, cmd, timeoutMs, signal) =>
      rt<{ stdout: Uint8Array; stderr: Uint8Array; exit_code: number }>(
        "ExecSync",
        { container_id: id, cmd, timeout: Math.ceil(timeoutMs / 1000) },
        { timeoutMs: timeoutMs > 0 ? timeoutMs : null, signal },
      ).catch((error: KubeletError) => {
        // The deadline travels with the call: containerd may hit it first and answer Unknown.
        const cause = error.cause as GrpcError | undefined;
        if (cause?.code === GrpcStatus.DEADLINE_EXCEEDED || /deadline exceeded/i.test(cause?.details ?? ""))
          throw runtimeError(
            "ExecTimeout",
            `cannot ExecSync in container ${id.slice(0, 12)}: no exit within ${timeoutMs} ms`,
          );
        throw error;
      }),
    exec: async (id, cmd, { tty, stdin, stdout, stderr }) =>
      (await rt<{ url: string }>("Exec", { container_id: id, cmd, tty, stdin, stdout, stderr })).url,
    attach: async (id, { tty, stdin, stdout, stderr }) =>
      (await rt<{ url: string }>("Attach", { container_id: id, tty, stdin, stdout, stderr })).url,
    portForward: async (id, ports) =>
      (await rt<{ url: string }>("PortForward", { pod_sandbox_id: id, port: ports })).url,
    listContainerStats: async (filter = {}) =>
      (await rt<any>("ListContainerStats", { filter: { id: filter.id ?? "" } })).stats,
    reopenContainerLog: async (id) => void (await rt("ReopenContainerLog", { container_id: id })),
    containerEvents: (signal, opened) => rtStream<CriContainerEvent>("GetContainerEvents", {}, signal, opened),
    imageStatus: async (ref) => (await img<any>("ImageStatus", { image: { image: ref } })).image ?? undefined,
    // Pulls are as long as the image is big; the caller's signal bounds them.
    pullImage: async (ref, { auth, signal } = {}) =>
      (await img<any>("PullImage", { image: { image: ref }, auth: auth ?? null }, { timeoutMs: null, signal }))
        .image_ref,
    listImages: async () => (await img<any>("ListImages", {})).images ?? [],
    removeImage: async (ref) => void (await img<any>("RemoveImage", { image: { image: ref } })),
    imageFsInfo: async () => (await img<any>("ImageFsInfo", {})).image_filesystems ?? [],
    close: () => {
      channels.runtime.close();
      channels.image.close();
    },
  };
}
