import { describe, expect, test } from "bun:test";
import { PassThrough } from "node:stream";
import { logsCommand, logsPath } from "./logs.ts";
import type { StreamClient } from "./stream-client.ts";

const options = { pod: "web", namespace: "default", follow: false, previous: false, timestamps: false };
const collect = (stream: PassThrough) => {
  let text = "";
  stream.on("data", (d) => (text += d));
  return () => text;
};
const answering = (response: () => Response): Pick<StreamClient, "fetch"> => ({ fetch: async () => response() });

describe("kubelet logs", () => {
  test("asks for the pod's log with kubectl's options in the API's names", () => {
    expect(logsPath({ ...options, container: "app", follow: true, previous: true, tail: 10, timestamps: true })).toBe(
      "/api/v1/namespaces/default/pods/web/log?container=app&follow=true&previous=true&timestamps=true&tailLines=10",
    );
    expect(logsPath({ ...options, tail: -1 })).toBe("/api/v1/namespaces/default/pods/web/log");
  });

  test("writes the log to stdout and exits 0", async () => {
    const out = new PassThrough();
    const text = collect(out);
    const code = await logsCommand(
      answering(() => new Response("line 1\nline 2\n")),
      options,
      { out, err: new PassThrough() },
    );
    expect({ code, out: text() }).toEqual({ code: 0, out: "line 1\nline 2\n" });
  });

  test("a refusal is printed as kubectl prints it, exit 1", async () => {
    const err = new PassThrough();
    const text = collect(err);
    const status = { kind: "Status", reason: "NotFound", message: 'pods "web" not found', code: 404 };
    const code = await logsCommand(
      answering(() => Response.json(status, { status: 404 })),
      options,
      {
        out: new PassThrough(),
        err,
      },
    );
    expect({ code, err: text() }).toEqual({ code: 1, err: 'Error from server (NotFound): pods "web" not found\n' });
  });
});
