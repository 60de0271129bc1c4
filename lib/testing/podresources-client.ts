// A pod resources API client for tests, as a monitoring agent would be: grpc-js on the kubelet's
// pod-resources/kubelet.sock, messages per podresources v1's proto.
import { loadGrpc } from "../grpc.ts";
import { serviceDefinition } from "../node/cm/devicemanager/grpc-service.ts";
import { POD_RESOURCES_SCHEMA } from "../node/podresources/podresources-schema.ts";

export interface PodResourcesClient {
  list(): Promise<any>;
  getAllocatableResources(): Promise<any>;
  get(name: string, namespace: string): Promise<any>;
  close(): void;
}

export async function podResourcesClient(socketPath: string): Promise<PodResourcesClient> {
  const grpc = await loadGrpc();
  const Client = grpc.makeGenericClientConstructor(
    serviceDefinition(POD_RESOURCES_SCHEMA, "v1", "PodResourcesLister"),
    "PodResourcesLister",
  );
  const client = new Client(`unix://${socketPath}`, grpc.credentials.createInsecure()) as any;
  const call = (method: string, request: object) =>
    new Promise<any>((resolve, reject) =>
      client[method](request, { deadline: Date.now() + 10_000 }, (error: any, response: any) =>
        error ? reject(new Error(error.details || error.message)) : resolve(response),
      ),
    );
  return {
    list: () => call("List", {}),
    getAllocatableResources: () => call("GetAllocatableResources", {}),
    get: (pod_name, pod_namespace) => call("Get", { pod_name, pod_namespace }),
    close: () => client.close(),
  };
}
