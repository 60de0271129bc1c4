// gRPC probes: the standard grpc.health.v1.Health/Check, run by the kubelet with Kubernetes' messages.
// gRPC is loaded on the first gRPC probe (lib/grpc.ts). The two health messages are one field each, encoded by hand rather than through a .proto.
import type { ProbeResult } from "./probes.ts";

import { loadGrpc } from "../../grpc.ts";

export const HEALTH_CHECK_PATH = "/grpc.health.v1.Health/Check";

/** grpc.health.v1.HealthCheckResponse.ServingStatus. */
export const SERVING_STATUS = ["UNKNOWN", "SERVING", "NOT_SERVING", "SERVICE_UNKNOWN"] as const;

/** HealthCheckRequest { string service = 1; } */
export function encodeHealthRequest(service: string): Buffer {
  const text = Buffer.from(service, "utf8");
  return text.length ? Buffer.concat([Buffer.from([0x0a]), varint(text.length), text]) : Buffer.alloc(0);
}

/** HealthCheckRequest's service (for test servers). */
export function decodeHealthRequest(bytes: Buffer): string {
  return bytes.length && bytes[0] === 0x0a ? bytes.subarray(1 + varintLength(bytes, 1)).toString("utf8") : "";
}

/** HealthCheckResponse { ServingStatus status = 1; } */
export function encodeHealthResponse(status: number): Buffer {
  return status ? Buffer.concat([Buffer.from([0x08]), varint(status)]) : Buffer.alloc(0);
}

export function decodeHealthResponse(bytes: Buffer): number {
  let status = 0;
  for (let i = 0; i < bytes.length; ) {
    const tag = bytes[i++]!;
    if (tag !== 0x08) break; // the only field of the message; anything else is a newer server's extension
    let value = 0;
    for (let shift = 0; i < bytes.length; shift += 7) {
      const byte = bytes[i++]!;
      value |= (byte & 0x7f) << shift;
      if (byte < 0x80) break;
    }
    status = value;
  }
  return status;
}

/** One Health/Check against host:port within the timeout. */
export async function grpcProbe(
  host: string,
  port: number,
  service: string,
  timeoutMs: number,
): Promise<{ result: ProbeResult; message: string }> {
  const { Client, credentials, status: codes } = await loadGrpc();
  const address = `${host.includes(":") ? `[${host}]` : host}:${port}`;
  const seconds = `${timeoutMs / 1000}s`;
  const client = new Client(address, credentials.createInsecure());
  const deadline = Date.now() + timeoutMs;
  try {
    const connected = await new Promise<Error | undefined>((resolve) => client.waitForReady(deadline, resolve));
    if (connected)
      return {
        result: "failure",
        message: `timeout: failed to connect service ${JSON.stringify(address)} within ${seconds}: ${connected.message}`,
      };
    const answer = await new Promise<{ code: number; details: string } | number>((resolve) => {
      client.makeUnaryRequest(
        HEALTH_CHECK_PATH,
        (request: Buffer) => request,
        // An object, not the bare number: grpc-js takes a falsy message (UNKNOWN = 0) for no message.
        (bytes: Buffer) => ({ status: decodeHealthResponse(bytes) }),
        encodeHealthRequest(service),
        { deadline },
        (error, response) => resolve(error ? { code: error.code, details: error.details } : (response?.status ?? 0)),
      );
    });
    if (typeof answer !== "number") {
      if (answer.code === codes.UNIMPLEMENTED)
        return {
          result: "failure",
          message: `error: this server does not implement the grpc health protocol (grpc.health.v1.Health): ${answer.details}`,
        };
      if (answer.code === codes.DEADLINE_EXCEEDED)
        return { result: "failure", message: `timeout: health rpc did not complete within ${seconds}` };
      return { result: "failure", message: `error: health rpc probe failed: ${answer.details}` };
    }
    if (answer !== 1)
      return {
        result: "failure",
        message: `service unhealthy (responded with ${JSON.stringify(SERVING_STATUS[answer] ?? String(answer))})`,
      };
    return { result: "success", message: "" };
  } finally {
    client.close();
  }
}

function varint(value: number): Buffer {
  const bytes: number[] = [];
  while (value > 0x7f) {
    bytes.push((value & 0x7f) | 0x80);
    value >>>= 7;
  }
  bytes.push(value);
  return Buffer.from(bytes);
}

function varintLength(bytes: Buffer, offset: number): number {
  let n = 0;
  while (offset + n < bytes.length && bytes[offset + n]! >= 0x80) n++;
  return n + 1;
}
