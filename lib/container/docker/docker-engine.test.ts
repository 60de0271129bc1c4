import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import { createServer as createNetServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createDockerEngine } from "./docker-engine.ts";

/** The status an Engine answers each request with (dockerode refuses any other). */
const STATUS: Array<[RegExp, number]> = [
  [/^POST \/containers\/create/, 201],
  [/^POST \/containers\/\w+\/exec/, 201],
  [/^POST \/containers\/\w+\/(start|stop)/, 204],
  [/^DELETE \/containers\//, 204],
];

/** A fake Engine socket: it records each request line, the registry auth header and the body, and answers `{}`. */
async function fakeEngineSocket() {
  const dir = mkdtempSync(join(tmpdir(), "docker-engine-"));
  const seen: string[] = [];
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (chunk) => (body += chunk));
    req.on("end", () => {
      const line = `${req.method} ${req.url}`;
      const auth = req.headers["x-registry-auth"];
      seen.push(
        [line, body, auth ? `auth ${Buffer.from(String(auth), "base64").toString()}` : ""].filter(Boolean).join(" "),
      );
      res.writeHead(STATUS.find(([route]) => route.test(line))?.[1] ?? 200, { "content-type": "application/json" });
      res.end(line.includes("/exec") ? JSON.stringify({ Id: "e1" }) : "{}");
    });
  });
  const socket = join(dir, "docker.sock");
  await new Promise<void>((resolve) => server.listen(socket, resolve));
  const close = () => {
    server.close();
    rmSync(dir, { recursive: true, force: true });
  };
  return { endpoint: `unix://${socket}`, seen, close };
}

describe("the Engine calls", () => {
  const fake = fakeEngineSocket();
  afterAll(async () => (await fake).close());

  test("are the Engine API requests the kubelet has always sent", async () => {
    const { endpoint, seen } = await fake;
    const engine = createDockerEngine(endpoint);
    const signal = new AbortController().signal;
    const params = { stdout: true, stderr: true, timestamps: false, tail: 5 };
    await engine.version(signal);
    await engine.info(signal);
    await engine.diskUsage(signal);
    await engine.createContainer({ name: "k8s_x", Image: "busybox", Labels: {}, HostConfig: {} }, signal);
    await engine.startContainer("c1", signal);
    await engine.stopContainer("c1", 3, signal);
    await engine.removeContainer("c1", { force: true, v: true }, signal);
    await engine.inspectContainer("c1", signal);
    await engine.listContainers({ all: true, size: false, filters: { label: ["a=b"] } }, signal);
    await engine.updateContainer("c1", { CpuShares: 2 }, signal);
    await engine.containerStats("c1", signal);
    await engine.readLogs("c1", params, signal);
    await engine.resizeContainer("c1", { w: 80, h: 24 }, signal);
    await engine.createExec("c1", { Cmd: ["true"], AttachStdout: true }, signal);
    await engine.inspectImage("busybox:1", signal);
    (await engine.pull("busybox:1", { username: "u", password: "p" }, signal)).destroy();
    await engine.listImages(signal);
    await engine.removeImage("busybox:1", signal);
    expect(seen).toEqual([
      "GET /version",
      "GET /info",
      "GET /system/df",
      'POST /containers/create?name=k8s_x&Image=busybox&Labels=%7B%7D&HostConfig=%7B%7D {"name":"k8s_x","Image":"busybox","Labels":{},"HostConfig":{}}',
      "POST /containers/c1/start",
      'POST /containers/c1/stop?t=3 {"t":3}',
      "DELETE /containers/c1?force=true&v=true",
      "GET /containers/c1/json",
      `GET /containers/json?all=true&size=false&filters=${encodeURIComponent('{"label":["a=b"]}')}`,
      'POST /containers/c1/update {"CpuShares":2}',
      "GET /containers/c1/stats?stream=false&one-shot=true",
      "GET /containers/c1/logs?stdout=true&stderr=true&timestamps=false&tail=5&follow=false",
      'POST /containers/c1/resize?w=80&h=24 {"w":80,"h":24}',
      'POST /containers/c1/exec {"Cmd":["true"],"AttachStdout":true}',
      "GET /images/busybox:1/json",
      'POST /images/create?fromImage=busybox&tag=1 {"fromImage":"busybox","tag":"1"} auth {"username":"u","password":"p"}',
      "GET /images/json",
      "DELETE /images/busybox:1",
    ]);
  });

  test("the event stream asks for container lifecycle events only", async () => {
    const { endpoint, seen } = await fake;
    seen.length = 0;
    const events = await createDockerEngine(endpoint).events(
      { type: ["container"], event: ["die", "oom"] },
      new AbortController().signal,
    );
    events.destroy();
    expect(seen).toEqual([`GET /events?filters=${encodeURIComponent('{"type":["container"],"event":["die","oom"]}')}`]);
  });
});

describe("the Docker endpoint", () => {
  test("a scheme other than unix, tcp, http and https is InvalidValue", () => {
    expect(() => createDockerEngine("ssh://core@node-1")).toThrow(expect.objectContaining({ code: "InvalidValue" }));
    expect(() => createDockerEngine("tcp://[::1]:2375")).not.toThrow();
  });
});

describe("hijacked Engine calls", () => {
  test("an exec starts hijacked, with the TTY in its body only when asked; an attach is hijacked too", async () => {
    // A raw socket, as the HTTP server hands an upgraded request no body: each request is recorded with its body,
    // then answered as the Engine does, 101 and the raw stream (here empty); a plain request gets an exec id.
    const dir = mkdtempSync(join(tmpdir(), "docker-hijack-"));
    const seen: string[] = [];
    const server = createNetServer((socket) => {
      let text = "";
      socket.on("data", (chunk) => {
        text += chunk.toString();
        const [head = "", body = ""] = text.split("\r\n\r\n");
        if (!text.includes("\r\n\r\n") || body.length < Number(/content-length: (\d+)/i.exec(head)?.[1] ?? 0)) return;
        seen.push(`${head.split(" ").slice(0, 2).join(" ")} ${body}`.trim());
        text = "";
        socket.write(
          /upgrade: tcp/i.test(head)
            ? "HTTP/1.1 101 UPGRADED\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n\r\n"
            : 'HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n{"Id":"e1"}',
        );
      });
    });
    const path = join(dir, "docker.sock");
    await new Promise<void>((resolve) => server.listen(path, resolve));
    try {
      const engine = createDockerEngine(`unix://${path}`);
      const exec = await engine.createExec("c1", { Cmd: ["true"] }, new AbortController().signal);
      (await exec.start({ stdin: false })).destroy();
      (await exec.start({ stdin: true, tty: true })).destroy();
      (await engine.attach("c1", { stdin: false, stdout: true, stderr: true })).destroy();
      expect(seen).toEqual([
        'POST /containers/c1/exec {"Cmd":["true"]}',
        'POST /exec/e1/start {"hijack":true,"stdin":false}',
        'POST /exec/e1/start {"hijack":true,"stdin":true,"Tty":true}',
        'POST /containers/c1/attach?stream=true&hijack=true&stdin=false&stdout=true&stderr=true {"stream":true,"hijack":true,"stdin":false,"stdout":true,"stderr":true}',
      ]);
    } finally {
      server.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
