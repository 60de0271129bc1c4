// The Registration service on <root_dir>/device-plugins/kubelet.sock (plugin/v1beta1/server.go): each
// Register request is handed to the device manager; a refusal goes back to the plugin as the gRPC error.
import { rmSync } from "node:fs";
import { serveUnixOnDemand } from "../../../grpc.ts";
import { DEVICE_PLUGIN_SCHEMA } from "./deviceplugin-schema.ts";
import { serviceDefinition } from "./grpc-service.ts";
import type { RegisterRequest } from "./manager.ts";

/** Serves Registration on `socketPath` until the returned function is called; grpc-js loads when a plugin first dials. */
export async function serveRegistration(
  socketPath: string,
  register: (request: RegisterRequest) => Promise<void>,
): Promise<() => Promise<void>> {
  rmSync(socketPath, { force: true });
  return serveUnixOnDemand(socketPath, (grpc, server) =>
    server.addService(serviceDefinition(DEVICE_PLUGIN_SCHEMA, "v1beta1", "Registration"), {
      Register: (call: { request: RegisterRequest }, callback: (error: object | null, response?: object) => void) => {
        register(call.request).then(
          () => callback(null, {}),
          (error: Error) => callback({ code: grpc.status.UNKNOWN, details: error.message }),
        );
      },
    }),
  );
}
