// A raw TCP client for the info server's connection handling (idle and slow clients), shared by the
// e2e suites of every runtime.
import { connect, type Socket } from "node:net";

/** A raw TCP connection to the server, with what it received and when it was closed. */
export function rawClient(port: number) {
  const socket: Socket = connect(port, "127.0.0.1");
  const state = { received: "", closedAt: 0 };
  socket.on("data", (d) => (state.received += d));
  socket.on("error", () => {});
  const closed = new Promise<number>((resolve) =>
    socket.on("close", () => {
      state.closedAt = Date.now();
      resolve(state.closedAt);
    }),
  );
  return { socket, state, closed };
}
