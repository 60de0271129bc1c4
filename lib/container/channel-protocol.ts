// The Kubernetes remote-command channel protocol over WebSocket (v5.channel.k8s.io, v4.channel.k8s.io,
// and the older channel.k8s.io and base64.channel.k8s.io), which the kubelet's /exec and /attach speak
// and a CRI runtime's streaming server speaks too: every binary message is one channel byte and its
// payload (base64: a text message of the channel digit and the payload in base64). Pure encoding.

/** Channel numbers: stdin 0, stdout 1, stderr 2, error 3 (a metav1.Status JSON), resize 4 (a TerminalSize JSON). */
export const CHANNEL = { stdin: 0, stdout: 1, stderr: 2, error: 3, resize: 4 } as const;

/** v5 only: a message [255, channel] closes that channel (the client's end of file on stdin). */
export const CLOSE_SIGNAL = 255;

export const V5_PROTOCOL = "v5.channel.k8s.io";
export const V4_PROTOCOL = "v4.channel.k8s.io";
/** The first protocol: binary frames, and the error channel carries the failure's text (nothing on success). */
export const V1_PROTOCOL = "channel.k8s.io";
/** channel.k8s.io in text messages: the channel as a digit, then the payload in base64 (for browsers). */
export const BASE64_PROTOCOL = "base64.channel.k8s.io";
/** The subprotocols served, newest first (v5 adds closing stdin; v4 a Status JSON on the error channel). */
export const CHANNEL_PROTOCOLS = [V5_PROTOCOL, V4_PROTOCOL, BASE64_PROTOCOL, V1_PROTOCOL] as const;

/** The first protocol of a Sec-WebSocket-Protocol header we speak, in the client's order (as the Go server picks). */
export function negotiateProtocol(header: string | null): string | undefined {
  const offered = (header ?? "")
    .split(",")
    .map((p) => p.trim())
    .filter(Boolean);
  return offered.find((p) => (CHANNEL_PROTOCOLS as readonly string[]).includes(p));
}

/** One message: the channel byte, then the payload. */
export function encodeFrame(channel: number, data: Uint8Array = new Uint8Array(0)): Uint8Array {
  const frame = new Uint8Array(data.length + 1);
  frame[0] = channel;
  frame.set(data, 1);
  return frame;
}

/** A message's channel and payload; undefined for an empty message (it carries no channel). */
export function decodeFrame(message: Uint8Array): { channel: number; data: Uint8Array } | undefined {
  if (message.length === 0) return undefined;
  return { channel: message[0]!, data: message.subarray(1) };
}

/** The metav1.Status the error channel carries, as the Go kubelet marshals it (no kind, empty metadata). */
export interface ChannelStatus {
  metadata: Record<string, never>;
  status: "Success" | "Failure";
  message?: string;
  reason?: string;
  details?: { causes: Array<{ reason?: string; message: string }> };
  code?: number;
}

const encoder = new TextEncoder();

/** The status of a finished command: Success for 0 (and for an attach), else NonZeroExitCode with the code as cause. */
export function exitStatus(exitCode: number | undefined): ChannelStatus {
  if (!exitCode) return { metadata: {}, status: "Success" };
  return {
    metadata: {},
    status: "Failure",
    message: `command terminated with non-zero exit code: exit status ${exitCode}`,
    reason: "NonZeroExitCode",
    details: { causes: [{ reason: "ExitCode", message: String(exitCode) }] },
  };
}

/** The status of a stream the runtime failed (apierrors.NewInternalError's shape). */
export function internalErrorStatus(message: string): ChannelStatus {
  return {
    metadata: {},
    status: "Failure",
    message: `Internal error occurred: ${message}`,
    reason: "InternalError",
    details: { causes: [{ message }] },
    code: 500,
  };
}

/** The error-channel message carrying `status`. */
export function statusFrame(status: ChannelStatus): Uint8Array {
  return encodeFrame(CHANNEL.error, encoder.encode(JSON.stringify(status)));
}

/**
 * What an error-channel payload says: the exit code (0 for Success), or the failure's message. v4 and v5
 * carry a Status JSON; anything else is taken as an error text (the pre-v4 protocols sent plain text).
 */
export function readStatus(payload: Uint8Array): { exitCode: number } | { error: string } {
  const text = new TextDecoder().decode(payload);
  let status: Partial<ChannelStatus>;
  try {
    status = JSON.parse(text) as Partial<ChannelStatus>;
  } catch {
    return { error: text };
  }
  if (status.status === "Success") return { exitCode: 0 };
  const exitCode = status.details?.causes?.find((c) => c.reason === "ExitCode")?.message;
  if (status.reason === "NonZeroExitCode" && exitCode !== undefined && /^\d+$/.test(exitCode))
    return { exitCode: Number(exitCode) };
  return { error: status.message ?? text };
}

/** A resize message's payload, in the Go TerminalSize's field names. */
export function encodeResize(size: { width: number; height: number }): Uint8Array {
  return encoder.encode(JSON.stringify({ Width: size.width, Height: size.height }));
}

/** A resize payload's size; undefined when it is not a TerminalSize of whole positive numbers. */
export function decodeResize(payload: Uint8Array): { width: number; height: number } | undefined {
  try {
    const size = JSON.parse(new TextDecoder().decode(payload)) as { Width?: unknown; Height?: unknown };
    const valid = (n: unknown): n is number => Number.isInteger(n) && (n as number) > 0 && (n as number) < 65536;
    return valid(size.Width) && valid(size.Height) ? { width: size.Width, height: size.Height } : undefined;
  } catch {
    return undefined;
  }
}

/** How one protocol frames messages and what its error channel carries. */
export interface ChannelCodec {
  /** One message: binary, or text for base64.channel.k8s.io. */
  encode(channel: number, data?: Uint8Array): Uint8Array | string;
  /** A client message (text messages as their UTF-8 bytes); undefined when it carries no channel. */
  decode(message: Uint8Array): { channel: number; data: Uint8Array } | undefined;
  /** The error-channel message ending a stream; undefined when the protocol sends none (success before v4). */
  status(status: ChannelStatus): Uint8Array | string | undefined;
}

/** The codec of a negotiated subprotocol. */
export function channelCodec(protocol: string): ChannelCodec {
  const statusJson = protocol === V5_PROTOCOL || protocol === V4_PROTOCOL;
  const base64 = protocol === BASE64_PROTOCOL;
  const encode = (channel: number, data: Uint8Array = new Uint8Array(0)) =>
    base64 ? `${channel}${Buffer.from(data).toString("base64")}` : encodeFrame(channel, data);
  return {
    encode,
    decode(message) {
      if (!base64) return decodeFrame(message);
      const text = new TextDecoder().decode(message);
      if (!/^\d/.test(text)) return undefined;
      return { channel: Number(text[0]), data: new Uint8Array(Buffer.from(text.slice(1), "base64")) };
    },
    status(status) {
      if (statusJson) return encode(CHANNEL.error, encoder.encode(JSON.stringify(status)));
      return status.status === "Success" ? undefined : encode(CHANNEL.error, encoder.encode(status.message ?? ""));
    },
  };
}
