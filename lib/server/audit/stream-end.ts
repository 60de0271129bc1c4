// When a long response ends: a WebSocket stream (exec, attach, port-forward) closing, with the exit code its
// error channel carried, or a streamed body (a followed log) finishing or cancelled by the client.
import { CHANNEL, channelCodec, readStatus, V1_PROTOCOL, BASE64_PROTOCOL } from "../../container/channel-protocol.ts";
import { isLongLived, longLived } from "../../platform/long-lived.ts";
import { upgradeToWebSocket, webSocketSessionOf } from "../../platform/websocket.ts";

/** How a stream ended: the exit code the client was sent, or the error it was told. */
export interface StreamOutcome {
  exitCode?: number;
  error?: string;
}

const encoder = new TextEncoder();

/**
 * Calls `onEnd` once when the WebSocket session `response` upgrades to closes, with what its error channel said
 * (read from the frames sent, so the audit sees what the client saw); false when `response` is no upgrade.
 */
export function watchWebSocket(response: Response, onEnd: (outcome: StreamOutcome) => void): boolean {
  const session = webSocketSessionOf(response);
  if (!session) return false;
  const codec = channelCodec(session.protocol);
  const outcome: StreamOutcome = {};
  let sentStatus = false;
  let closedByServer = false;
  let ended = false;
  const end = () => {
    if (ended) return;
    ended = true;
    // Before v4 a success sends nothing on the error channel; a failure sends its text ("… exit status 3").
    const legacy = session.protocol === V1_PROTOCOL || session.protocol === BASE64_PROTOCOL;
    if (legacy && outcome.error !== undefined) {
      const code = /exit status (\d+)$/.exec(outcome.error)?.[1];
      if (code !== undefined) Object.assign(outcome, { exitCode: Number(code), error: undefined });
    }
    if (legacy && !sentStatus && closedByServer) outcome.exitCode = 0;
    onEnd(Object.fromEntries(Object.entries(outcome).filter(([, v]) => v !== undefined)) as StreamOutcome);
  };
  upgradeToWebSocket(response, {
    protocol: session.protocol,
    open(socket) {
      session.open({
        send(data) {
          const frame = codec.decode(typeof data === "string" ? encoder.encode(data) : data);
          if (frame?.channel === CHANNEL.error) {
            sentStatus = true;
            Object.assign(outcome, readStatus(frame.data));
          }
          return socket.send(data);
        },
        close(code, reason) {
          closedByServer = true;
          socket.close(code, reason);
          end();
        },
      });
    },
    message: (data) => session.message(data),
    close() {
      session.close();
      if (!closedByServer) outcome.error ??= "the client closed the stream";
      end();
    },
  });
  return true;
}

/** A copy of `response` whose body calls `onEnd` once when it is read to its end, fails or is cancelled. */
export function watchBody(response: Response, onEnd: (outcome: StreamOutcome) => void): Response {
  const body = response.body;
  if (!body) {
    onEnd({});
    return response;
  }
  let ended = false;
  const end = (outcome: StreamOutcome) => {
    if (!ended) onEnd(outcome);
    ended = true;
  };
  const reader = body.getReader();
  const watched = new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const { done, value } = await reader.read();
        if (done) {
          controller.close();
          end({});
        } else controller.enqueue(value);
      } catch (error) {
        controller.error(error);
        end({ error: (error as Error).message });
      }
    },
    async cancel(reason) {
      end({ error: "the client closed the stream" });
      await reader.cancel(reason);
    },
  });
  const copy = new Response(watched, response);
  return isLongLived(response) ? longLived(copy) : copy;
}
