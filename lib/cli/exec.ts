// `kubelet exec [-i] [-t] [-c CONTAINER] [-n NS] POD -- COMMAND [ARG…]`: kubectl's exec as a thin client of the API's
// pods/{name}/exec on the local kubelet, over a WebSocket in the remote-command channel protocol (v5.channel.k8s.io,
// v4 as the fallback): stdin on channel 0, stdout 1, stderr 2, the outcome's Status on 3, the terminal's size on 4.
// The exit code is the command's own, as kubectl's is; 1 when the kubelet refuses.
import type { StreamClient } from "./stream-client.ts";

export interface ExecOptions {
  pod: string;
  namespace: string;
  container?: string;
  command: string[];
  stdin: boolean;
  tty: boolean;
}

/** The terminal and the streams exec joins: process.stdin/stdout/stderr, or a test's. */
export interface ExecIo {
  in: NodeJS.ReadableStream & { isTTY?: boolean; setRawMode?(raw: boolean): unknown };
  out: NodeJS.WritableStream & { columns?: number; rows?: number; on?(event: "resize", listener: () => void): unknown };
  err: NodeJS.WritableStream;
}

const STDIN = 0;
const STDOUT = 1;
const STDERR = 2;
const ERROR = 3;
const RESIZE = 4;
/** v5: a message [255, channel] closes that channel (stdin's end of file). */
const CLOSE = 255;

/** The request path of `options` (the command repeated, as kubectl sends it). */
export function execPath(options: ExecOptions): string {
  const query = new URLSearchParams();
  for (const part of options.command) query.append("command", part);
  if (options.container) query.set("container", options.container);
  if (options.stdin) query.set("stdin", "true");
  query.set("stdout", "true");
  // A terminal carries one stream: stderr is part of it.
  if (!options.tty) query.set("stderr", "true");
  if (options.tty) query.set("tty", "true");
  return `/api/v1/namespaces/${encodeURIComponent(options.namespace)}/pods/${encodeURIComponent(options.pod)}/exec?${query}`;
}

/**
 * The command's exit code from the error channel's Status: Success is 0; NonZeroExitCode carries it in its causes
 * (reason ExitCode); any other failure is printed as kubectl prints it and is 1.
 */
export function exitCodeOf(statusText: string, err: NodeJS.WritableStream): number {
  let status: {
    status?: string;
    reason?: string;
    message?: string;
    details?: { causes?: Array<{ reason?: string; message?: string }> };
  };
  try {
    status = JSON.parse(statusText) as typeof status;
  } catch {
    // channel.k8s.io v1-v3 put the failure's text there, not a Status.
    if (!statusText) return 0;
    err.write(`error: ${statusText}\n`);
    return 1;
  }
  if (status.status === "Success") return 0;
  const code = status.details?.causes?.find((c) => c.reason === "ExitCode")?.message;
  if (status.reason === "NonZeroExitCode" && code !== undefined && /^\d+$/.test(code)) return Number(code);
  err.write(`error: ${status.message ?? statusText}\n`);
  return 1;
}

/** Why the exec could not start: the pod's Status as kubectl prints it, or that the kubelet is not answering. */
async function refusal(client: Pick<StreamClient, "fetch">, options: ExecOptions): Promise<string> {
  const path = `/api/v1/namespaces/${encodeURIComponent(options.namespace)}/pods/${encodeURIComponent(options.pod)}`;
  try {
    const response = await client.fetch(path);
    const status = (await response.json().catch(() => ({}))) as { kind?: string; reason?: string; message?: string };
    if (!response.ok) return `Error from server (${status.reason ?? response.status}): ${status.message ?? ""}`;
    return `error: the kubelet refused to run the command in pod "${options.pod}"${options.container ? ` container "${options.container}"` : ""}: check the container name (-c) and that it is running`;
  } catch (error) {
    return `error: cannot reach the kubelet: ${(error as Error).message}`;
  }
}

/** Runs the command in the pod, joined to `io`; resolves to its exit code. */
export function execCommand(
  client: Pick<StreamClient, "webSocket" | "fetch">,
  options: ExecOptions,
  io: ExecIo,
): Promise<number> {
  const socket = client.webSocket(execPath(options), ["v5.channel.k8s.io", "v4.channel.k8s.io"]);
  socket.binaryType = "arraybuffer";
  const frame = (channel: number, data: Uint8Array | string) => {
    const payload = typeof data === "string" ? new TextEncoder().encode(data) : data;
    const message = new Uint8Array(payload.length + 1);
    message[0] = channel;
    message.set(payload, 1);
    return message;
  };
  const raw = options.tty && io.in.isTTY && io.in.setRawMode;
  let status: string | undefined;
  return new Promise<number>((resolve) => {
    const sendSize = () => {
      if (io.out.columns && io.out.rows && socket.readyState === socket.OPEN)
        socket.send(frame(RESIZE, JSON.stringify({ Width: io.out.columns, Height: io.out.rows })));
    };
    const onInput = (chunk: Buffer | string) => {
      if (socket.readyState === socket.OPEN)
        socket.send(frame(STDIN, typeof chunk === "string" ? chunk : new Uint8Array(chunk)));
    };
    const onEnd = () => {
      // Only v5 can say "no more input" without closing the whole stream; v4 leaves stdin open.
      if (socket.readyState === socket.OPEN && socket.protocol === "v5.channel.k8s.io")
        socket.send(new Uint8Array([CLOSE, STDIN]));
    };
    socket.onopen = () => {
      if (options.tty) {
        sendSize();
        io.out.on?.("resize", sendSize);
      }
      if (options.stdin) {
        if (raw) io.in.setRawMode!(true);
        io.in.on("data", onInput);
        io.in.on("end", onEnd);
        io.in.resume();
      }
    };
    socket.onmessage = (event: MessageEvent) => {
      const message = new Uint8Array(event.data as ArrayBuffer);
      const payload = message.subarray(1);
      if (message[0] === STDOUT) io.out.write(payload);
      else if (message[0] === STDERR) io.err.write(payload);
      else if (message[0] === ERROR) status = (status ?? "") + new TextDecoder().decode(payload);
    };
    const finish = (code: number) => {
      if (raw) io.in.setRawMode!(false);
      io.in.off("data", onInput);
      io.in.off("end", onEnd);
      io.in.pause();
      resolve(code);
    };
    socket.onclose = (event: CloseEvent) => {
      if (status !== undefined) return finish(exitCodeOf(status, io.err));
      if (event.code === 1000) return finish(0);
      // Refused at the upgrade, whose answer a WebSocket client never sees: ask for the pod to say why, as kubectl
      // prints it (NotFound, Forbidden…).
      void refusal(client, options).then((why) => {
        io.err.write(`${why}\n`);
        finish(1);
      });
    };
  });
}
