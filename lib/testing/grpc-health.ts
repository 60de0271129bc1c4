// A grpc.health.v1 server for tests: answers Health/Check with a status the test sets, on 127.0.0.1.
import {
  decodeHealthRequest,
  encodeHealthResponse,
  HEALTH_CHECK_PATH,
  SERVING_STATUS,
} from "../node/prober/grpc-probe.ts";
import { loadGrpc } from "../grpc.ts";

export interface HealthServer {
  port: number;
  /** Sets what Check answers for a service ("" is the server as a whole). */
  set(status: (typeof SERVING_STATUS)[number], service?: string): void;
  /** Services asked about, in order. */
  asked: string[];
  stop(): Promise<void>;
}

export async function startHealthServer(port = 0): Promise<HealthServer> {
  const grpc = await loadGrpc();
  const statuses = new Map<string, number>([["", 1]]);
  const asked: string[] = [];
  const server = new grpc.Server();
  server.addService(
    {
      Check: {
        path: HEALTH_CHECK_PATH,
        requestStream: false,
        responseStream: false,
        requestSerialize: (value: { service: string }) => Buffer.from(value.service),
        // An object, not the bare string: grpc-js treats a falsy message ("") as no message at all.
        requestDeserialize: (bytes: Buffer) => ({ service: decodeHealthRequest(bytes) }),
        responseSerialize: encodeHealthResponse,
        responseDeserialize: (bytes: Buffer) => bytes[1] ?? 0,
      },
    },
    {
      Check: (call: { request: { service: string } }, callback: (error: Error | null, status?: number) => void) => {
        asked.push(call.request.service);
        const status = statuses.get(call.request.service);
        if (status === undefined) callback({ code: grpc.status.NOT_FOUND, details: "unknown service" } as never);
        else callback(null, status);
      },
    },
  );
  const bound = await new Promise<number>((resolve, reject) =>
    server.bindAsync(`127.0.0.1:${port}`, grpc.ServerCredentials.createInsecure(), (error, p) =>
      error ? reject(error) : resolve(p),
    ),
  );
  return {
    port: bound,
    set: (status, service = "") => statuses.set(service, SERVING_STATUS.indexOf(status)),
    asked,
    stop: () => new Promise((resolve) => server.tryShutdown(() => resolve())),
  };
}
