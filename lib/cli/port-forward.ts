// `kubelet port-forward [-n NS] POD [LOCAL:]REMOTE…`: kubectl's port-forward as a thin client of the API's
// pods/{name}/portforward on the local kubelet. It listens on 127.0.0.1:LOCAL and carries each accepted connection
// over a WebSocket of its own in the client libraries' protocol (v4.channel.k8s.io: data on channel 0, a failure's
// text on channel 1, each opened by the port), until the signal aborts.
import { createServer, type AddressInfo, type Socket } from "node:net";
import type { StreamClient } from "./stream-client.ts";

export interface PortPair {
  local: number;
  remote: number;
}

/** kubectl's port arguments: `8080`, `8080:80`, `:80` (a free local port); an error text naming the bad one. */
export function parsePortPairs(args: string[]): PortPair[] | string {
  const pairs: PortPair[] = [];
  for (const arg of args) {
    const parts = arg.split(":");
    const [local, remote] = parts.length === 1 ? [arg, arg] : parts.length === 2 ? parts : [];
    const valid = (text: string | undefined, zero: boolean) =>
      text !== undefined &&
      (text === "" ? zero : /^\d+$/.test(text) && Number(text) <= 65535 && (zero || Number(text) > 0));
    if (!valid(local, true) || !valid(remote, false))
      return `invalid port "${arg}": give REMOTE, LOCAL:REMOTE or :REMOTE`;
    pairs.push({ local: Number(local || 0), remote: Number(remote) });
  }
  return pairs.length ? pairs : "give at least one port: REMOTE, LOCAL:REMOTE or :REMOTE";
}

/** Joins one accepted connection to the pod's `remote` port. */
function forwardConnection(
  client: StreamClient,
  path: string,
  remote: number,
  local: Socket,
  err: NodeJS.WritableStream,
) {
  const socket = client.webSocket(`${path}?ports=${remote}`, ["v4.channel.k8s.io"]);
  socket.binaryType = "arraybuffer";
  const opened = [false, false];
  const pending: Uint8Array<ArrayBuffer>[] = [];
  local.on("data", (data: Buffer) => {
    const frame = new Uint8Array([0, ...data]);
    if (socket.readyState === socket.OPEN) socket.send(frame);
    else pending.push(frame);
  });
  socket.onopen = () => {
    for (const frame of pending.splice(0)) socket.send(frame);
  };
  socket.onmessage = (event: MessageEvent) => {
    const message = new Uint8Array(event.data as ArrayBuffer);
    const channel = message[0];
    if (channel !== 0 && channel !== 1) return;
    if (!opened[channel]) opened[channel] = true;
    else if (channel === 0) local.write(message.subarray(1));
    else err.write(`error: ${new TextDecoder().decode(message.subarray(1))}\n`);
  };
  socket.onclose = () => local.end();
  local.on("close", () => socket.close(1000));
  local.on("error", () => socket.close(1000));
}

/** Forwards until `signal` aborts; resolves to the exit code (1 when a local port cannot be listened on). */
export async function portForwardCommand(
  client: StreamClient,
  options: { pod: string; namespace: string; ports: PortPair[]; signal: AbortSignal },
  io: { out: NodeJS.WritableStream; err: NodeJS.WritableStream },
): Promise<number> {
  const path = `/api/v1/namespaces/${encodeURIComponent(options.namespace)}/pods/${encodeURIComponent(options.pod)}/portforward`;
  const servers = [];
  for (const pair of options.ports) {
    const server = createServer((local) => {
      io.out.write(`Handling connection for ${(server.address() as AddressInfo).port}\n`);
      forwardConnection(client, path, pair.remote, local, io.err);
    });
    const listening = await new Promise<Error | undefined>((resolve) => {
      server.once("error", resolve);
      server.listen(pair.local, "127.0.0.1", () => resolve(undefined));
    });
    if (listening) {
      io.err.write(`error: unable to listen on port ${pair.local}: ${listening.message}\n`);
      for (const s of servers) s.close();
      return 1;
    }
    servers.push(server);
    io.out.write(`Forwarding from 127.0.0.1:${(server.address() as AddressInfo).port} -> ${pair.remote}\n`);
  }
  await new Promise<void>((resolve) => options.signal.addEventListener("abort", () => resolve(), { once: true }));
  for (const server of servers) server.close();
  return 0;
}
