// A registered plugin over gRPC (endpoint.go and plugin/v1beta1/client.go): dialled on its unix socket, asked
// for its options, then ListAndWatch, GetPreferredAllocation, Allocate and PreStartContainer.
import type * as GrpcTypes from "@grpc/grpc-js";
import { loadGrpc } from "../../../grpc.ts";
import {
  DEVICE_PLUGIN_SCHEMA,
  type ContainerAllocateResponse,
  type PluginDevice,
  type PluginOptions,
} from "./deviceplugin-schema.ts";
import { serviceDefinition } from "./grpc-service.ts";
import type { PluginEndpoint } from "./manager.ts";

/** How long dialling a plugin may take (connectionTimeout in client.go). */
const DIAL_TIMEOUT_MS = 10_000;
/** KubeletPreStartContainerRPCTimeoutInSecs. */
const PRE_START_TIMEOUT_MS = 30_000;

type Unary = (
  request: object,
  options: GrpcTypes.CallOptions,
  cb: (error: Error | null, response: any) => void,
) => void;

/** Dials `socketPath` and asks the plugin for its options. */
export async function connectPlugin(resource: string, socketPath: string): Promise<PluginEndpoint> {
  const grpc = await loadGrpc();
  const Client = grpc.makeGenericClientConstructor(
    serviceDefinition(DEVICE_PLUGIN_SCHEMA, "v1beta1", "DevicePlugin"),
    "DevicePlugin",
  );
  const client = new Client(`unix://${socketPath}`, grpc.credentials.createInsecure()) as unknown as Record<
    string,
    Unary
  > &
    GrpcTypes.Client;
  const call = <T>(method: string, request: object, timeoutMs?: number) =>
    new Promise<T>((resolve, reject) =>
      client[method]!.call(
        client,
        request,
        timeoutMs ? { deadline: Date.now() + timeoutMs } : {},
        (error: Error | null, response: T) =>
          error
            ? reject(new Error(`${resource} ${method}: ${(error as GrpcTypes.ServiceError).details ?? error.message}`))
            : resolve(response),
      ),
    );
  let options: PluginOptions;
  try {
    options = await new Promise<PluginOptions>((resolve, reject) =>
      client.GetDevicePluginOptions!.call(
        client,
        {},
        { deadline: Date.now() + DIAL_TIMEOUT_MS, waitForReady: true } as GrpcTypes.CallOptions,
        (error, response) => (error ? reject(error) : resolve(response)),
      ),
    );
  } catch (error) {
    client.close();
    throw new Error(
      `failed to get device plugin options: ${(error as GrpcTypes.ServiceError).details ?? (error as Error).message}`,
    );
  }
  let stream: GrpcTypes.ClientReadableStream<{ devices: PluginDevice[] }> | undefined;
  return {
    options,
    watch(onDevices) {
      return new Promise<void>((resolve, reject) => {
        stream = (client as any).ListAndWatch({}) as GrpcTypes.ClientReadableStream<{ devices: PluginDevice[] }>;
        stream.on("data", (response) => onDevices(response.devices));
        stream.on("error", (error: GrpcTypes.ServiceError) =>
          error.code === grpc.status.CANCELLED ? resolve() : reject(new Error(error.details || error.message)),
        );
        stream.on("end", () => resolve());
      });
    },
    async getPreferredAllocation(available, mustInclude, size) {
      const response = await call<{ container_responses: Array<{ deviceIDs: string[] }> }>("GetPreferredAllocation", {
        container_requests: [
          { available_deviceIDs: available, must_include_deviceIDs: mustInclude, allocation_size: size },
        ],
      });
      return response.container_responses[0]?.deviceIDs ?? [];
    },
    async allocate(ids) {
      const response = await call<{ container_responses: ContainerAllocateResponse[] }>("Allocate", {
        container_requests: [{ devices_ids: ids }],
      });
      const first = response.container_responses[0];
      if (!first) throw new Error(`no containers return in allocation response ${JSON.stringify(response)}`);
      return first;
    },
    async preStartContainer(ids) {
      await call("PreStartContainer", { devices_ids: ids }, PRE_START_TIMEOUT_MS);
    },
    close() {
      stream?.cancel();
      client.close();
    },
  };
}
