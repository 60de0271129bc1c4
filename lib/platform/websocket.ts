// WebSocket upgrades, neutral to the platform: a handler answers with a fallback response marked with
// what should run on the upgraded socket; the Bun adapter upgrades and drives it, and one that cannot
// (node:http, under node and deno) sends the fallback (a 501 naming what to run instead) as it is.
import { longLived } from "./long-lived.ts";

/** The server's end of an accepted WebSocket, as each adapter presents it. */
export interface ServerSocket {
  /**
   * Sends one message (binary, or text for a string); resolves once the socket can take more (at once unless the
   * send buffer is full).
   */
  send(data: Uint8Array | string): Promise<void>;
  close(code?: number, reason?: string): void;
}

/** What runs on an upgraded connection. */
export interface WebSocketSession {
  /** The subprotocol agreed with the client, sent back in Sec-WebSocket-Protocol. */
  protocol: string;
  open(socket: ServerSocket): void;
  /** A message from the client (text messages as their UTF-8 bytes). */
  message(data: Uint8Array): void;
  /** The connection closed, from either side. */
  close(): void;
}

const sessions = new WeakMap<Response, WebSocketSession>();

/** Marks `fallback` as a WebSocket upgrade to `session`; a platform that cannot upgrade sends the fallback. */
export function upgradeToWebSocket(fallback: Response, session: WebSocketSession): Response {
  sessions.set(fallback, session);
  return longLived(fallback);
}

/** The session a handler's response asks to upgrade to, if any. */
export function webSocketSessionOf(response: Response): WebSocketSession | undefined {
  return sessions.get(response);
}
