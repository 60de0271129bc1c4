// The only protobufjs import: a runtime.v1 client on a unix socket, over the shared gRPC loader (grpc.ts).
// Loaded with a dynamic import by the composition root only when --container_runtime is remote, so `kubelet --version` and Docker mode never pay for gRPC or the descriptor.
import type * as GrpcTypes from "@grpc/grpc-js";
import protobuf from "protobufjs";
import { KubeletError } from "../api/types.ts";
import { createListDecoder } from "./cri-list-decoder.ts";
import { CRI_PROTO } from "./cri-proto.ts";
import type { CriClient } from "./cri-types.ts";
import { loadGrpc } from "./grpc.ts";
import { runtimeError } from "./runtime.ts";
import { grpcConnectionCause, unreachableFix } from "./unreachable.ts";

const grpc = await loadGrpc();

export interface CriClientOptions {
  /** `unix:///run/containerd/containerd.sock` (a bare path is accepted too). */
  runtimeEndpoint: string;
  /** Defaults to the runtime endpoint. */
  imageEndpoint?: string;
  /** --runtime_request_timeout: the deadline of every call but image pulls. */
  requestTimeoutMs: number;
}

type Unary = (
  request: object,
  metadata: GrpcTypes.Metadata,
  options: GrpcTypes.CallOptions,
  cb: GrpcTypes.requestCallback<any>,
) => GrpcTypes.ClientUnaryCall;

/** `unix:///x` or `/x` → the address grpc-js takes; anything else is refused with the fix. */
export function criAddress(endpoint: string, flag: string): string {
  if (endpoint.startsWith("unix://")) return endpoint;
  if (endpoint.startsWith("/")) return `unix://${endpoint}`;
  throw new KubeletError(
    "InvalidEndpoint",
    `${flag} "${endpoint}": only unix sockets are supported; use unix:///run/containerd/containerd.sock`,
  );
}

let services: { runtime: GrpcTypes.ServiceClientConstructor; image: GrpcTypes.ServiceClientConstructor } | undefined;

// longs as numbers and enums as their names; defaults filled in, so an absent field reads as proto3's zero value.
const conversion = { longs: Number, enums: String, defaults: true };

/**
 * The two services' clients, built straight on grpc-js from the parsed text (no @grpc/proto-loader: its
 * descriptor conversion of every message cost 40–70 ms of CPU at each start). A message's codec is generated
 * by protobufjs on the first call that uses it, so start-up parses the text only.
 */
function loadServices() {
  if (services) return services;
  // keepCase: without it the fields are camelCased and snake_case requests are dropped silently.
  const root = protobuf.parse(CRI_PROTO, { keepCase: true }).root;
  const codec = (typeName: string) => {
    let type: protobuf.Type | undefined;
    const get = () => (type ??= root.lookupType(typeName));
    return {
      serialize: (value: object) => Buffer.from(get().encode(get().fromObject(value)).finish()),
      deserialize: (bytes: Buffer) => get().toObject(get().decode(bytes), conversion),
    };
  };
  // The relist's two lists are decoded item by item, unchanged items not again (cri-list-decoder.ts).
  const lists: Record<string, { itemType: string; field: string }> = {
    ListContainers: { itemType: "runtime.v1.Container", field: "containers" },
    ListPodSandbox: { itemType: "runtime.v1.PodSandbox", field: "items" },
  };
  const listDecoder = (method: string, { itemType, field }: { itemType: string; field: string }) => {
    const item = root.lookupType(itemType);
    const items = createListDecoder((bytes) => item.toObject(item.decode(bytes), conversion), {
      field: root.lookupType(`runtime.v1.${method}Response`).fields[field]!.id,
      version: [item.fields.id!.id, item.fields.state!.id],
    });
    return (bytes: Buffer) => ({ [field]: items(bytes) });
  };
  const client = (serviceName: string) => {
    const service = root.lookupService(serviceName);
    const definition: Record<string, GrpcTypes.MethodDefinition<object, object>> = {};
    for (const method of service.methodsArray) {
      const request = codec(`runtime.v1.${method.requestType}`);
      const response = codec(`runtime.v1.${method.responseType}`);
      const list = lists[method.name];
      let decodeList: ((bytes: Buffer) => object) | undefined;
      definition[method.name] = {
        path: `/${serviceName}/${method.name}`,
        requestStream: false,
        responseStream: false,
        requestSerialize: request.serialize,
        requestDeserialize: request.deserialize,
        responseSerialize: response.serialize,
        responseDeserialize: list
          ? (bytes: Buffer) => (decodeList ??= listDecoder(method.name, list))(bytes)
          : response.deserialize,
      };
    }
    return grpc.makeGenericClientConstructor(definition, serviceName);
  };
  services = { runtime: client("runtime.v1.RuntimeService"), image: client("runtime.v1.ImageService") };
  return services;
}

const fixFor = (detail: string) => {
  const fix = unreachableFix(detail, { flag: "--container_runtime_endpoint", service: "containerd" });
  return fix ? `: ${fix}` : "";
};

/** Maps a gRPC status to the port's codes, naming the socket and what answered. */
function mapError(error: GrpcTypes.ServiceError, method: string, endpoint: string): KubeletError {
  const detail = grpcConnectionCause(error.details || error.message);
  if (error.code === grpc.status.UNAVAILABLE && /Protocol error/.test(detail))
    return runtimeError(
      "RuntimeUnavailable",
      `cannot ${method}: something answered at ${endpoint}, but not with gRPC over HTTP/2 (a Docker socket? use --container_runtime docker with --docker_endpoint): ${detail}`,
      { cause: error },
    );
  if (error.code === grpc.status.UNAVAILABLE || error.code === grpc.status.DEADLINE_EXCEEDED)
    return runtimeError(
      "RuntimeUnavailable",
      `cannot ${method}: the container runtime at ${endpoint} did not answer: ${detail}${fixFor(detail)}`,
      { cause: error },
    );
  if (error.code === grpc.status.UNIMPLEMENTED)
    return runtimeError(
      "RuntimeUnavailable",
      `cannot ${method}: ${endpoint} answered but does not serve runtime.v1 (${detail}); is it a CRI runtime with the CRI plugin enabled?`,
      { cause: error },
    );
  if (error.code === grpc.status.NOT_FOUND || /not found|does not exist/i.test(detail))
    return runtimeError("NotFound", `cannot ${method}: ${detail}`, { cause: error });
  // containerd answers Unknown for a container in the wrong state; the port calls that a conflict, as Docker's 409.
  if (error.code === grpc.status.FAILED_PRECONDITION || /is in CONTAINER_\w+ state|is not running/.test(detail))
    return runtimeError("Conflict", `cannot ${method}: ${detail}`, { cause: error });
  if (error.code === grpc.status.CANCELLED)
    return runtimeError("Aborted", `cannot ${method}: cancelled`, { cause: error });
  return runtimeError("RuntimeError", `cannot ${method}: ${detail}`, { cause: error });
}

/** Opens (lazily: the first call connects) a runtime.v1 client on the given sockets. */
export function createCriClient(options: CriClientOptions): CriClient {
  const runtimeAddress = criAddress(options.runtimeEndpoint, "--container_runtime_endpoint");
  const imageAddress = criAddress(options.imageEndpoint || options.runtimeEndpoint, "--image_service_endpoint");
  const { runtime: Runtime, image: Image } = loadServices();
  const credentials = grpc.credentials.createInsecure();
  const channelOptions = { "grpc.max_receive_message_length": 16 * 1024 * 1024 };
  const clients = {
    runtime: new Runtime(runtimeAddress, credentials, channelOptions),
    image: new Image(imageAddress, credentials, channelOptions),
  };

  const call = <T>(
    service: "runtime" | "image",
    method: string,
    request: object,
    limits: { timeoutMs?: number | null; signal?: AbortSignal } = {},
  ): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      const address = service === "runtime" ? runtimeAddress : imageAddress;
      const client = clients[service];
      const timeoutMs = limits.timeoutMs === undefined ? options.requestTimeoutMs : limits.timeoutMs;
      const callOptions: GrpcTypes.CallOptions = timeoutMs === null ? {} : { deadline: Date.now() + timeoutMs };
      const fn = (client as unknown as Record<string, Unary>)[method]!;
      const pending = fn.call(client, request, new grpc.Metadata(), callOptions, (error, response) => {
        limits.signal?.removeEventListener("abort", cancel);
        if (error) reject(mapError(error, method, address));
        else resolve(response as T);
      });
      const cancel = () => pending.cancel();
      if (limits.signal?.aborted) cancel();
      limits.signal?.addEventListener("abort", cancel, { once: true });
    });
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
        const cause = error.cause as GrpcTypes.ServiceError | undefined;
        if (cause?.code === grpc.status.DEADLINE_EXCEEDED || /deadline exceeded/i.test(cause?.details ?? ""))
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
    listContainerStats: async (filter = {}) =>
      (await rt<any>("ListContainerStats", { filter: { id: filter.id ?? "" } })).stats,
    reopenContainerLog: async (id) => void (await rt("ReopenContainerLog", { container_id: id })),
    imageStatus: async (ref) => (await img<any>("ImageStatus", { image: { image: ref } })).image ?? undefined,
    // Pulls are as long as the image is big; the caller's signal bounds them.
    pullImage: async (ref, { auth, signal } = {}) =>
      (await img<any>("PullImage", { image: { image: ref }, auth: auth ?? null }, { timeoutMs: null, signal }))
        .image_ref,
    listImages: async () => (await img<any>("ListImages", {})).images ?? [],
    removeImage: async (ref) => void (await img<any>("RemoveImage", { image: { image: ref } })),
    imageFsInfo: async () => (await img<any>("ImageFsInfo", {})).image_filesystems ?? [],
    close: () => {
      clients.runtime.close();
      clients.image.close();
    },
  };
}
