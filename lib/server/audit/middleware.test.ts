import { beforeEach, expect, test } from "bun:test";
import { Hono } from "hono";
import { HTTPException } from "hono/http-exception";
import { CHANNEL, channelCodec, exitStatus, V5_PROTOCOL } from "../../container/channel-protocol.ts";
import { isLongLived, longLived } from "../../platform/long-lived.ts";
import { markRemoteAddress } from "../../platform/remote-address.ts";
import { upgradeToWebSocket, webSocketSessionOf } from "../../platform/websocket.ts";
import { FakeClock } from "../../testing/fake-clock.ts";
import type { AuthVariables } from "../authorizer.ts";
import { httpError, REASON, status } from "../server-support.ts";
import type { AuditLog } from "./audit-log.ts";
import type { AuditEvent } from "./event.ts";
import { createAuditMiddleware } from "./middleware.ts";

const T0 = Date.UTC(2026, 10, 28, 17, 0, 0);
let clock: FakeClock;
let events: AuditEvent[];
let app: Hono<{ Variables: Partial<AuthVariables> }>;

beforeEach(() => {
  clock = new FakeClock(T0);
  events = [];
  const log: AuditLog = {
    write: (e) => void events.push(JSON.parse(JSON.stringify(e))),
    flush: async () => {},
    dropped: () => 0,
    close: async () => {},
  };
  let id = 0;
  app = new Hono<{ Variables: Partial<AuthVariables> }>();
  app.onError((error, c) => {
    const e = error as HTTPException;
    return c.json(status(e.status, REASON[e.status] ?? "Failure", e.message), e.status);
  });
  app.use("*", createAuditMiddleware({ log, nodeName: "node-1" }, { clock, newId: () => `id-${++id}` }));
  // A stand-in for the authentication middleware: it sets the caller and the decision, or refuses.
  app.use("*", async (c, next) => {
    const token = c.req.header("authorization");
    if (token === "Bearer wrong") throw httpError(401, "Unauthorized");
    if (token) {
      const user = { name: token === "Bearer admin" ? "alice" : "scraper", uid: "7", groups: ["ops"] };
      const allowed = token === "Bearer admin";
      c.set("user", user);
      c.set("authorization", {
        attributes: {
          user,
          verb: "create",
          resourceRequest: true,
          apiGroup: "",
          apiVersion: "v1",
          resource: "nodes",
          subresource: "proxy",
          namespace: "",
          name: "node-1",
          path: c.req.path,
        },
        result: allowed
          ? { decision: "allow", reason: "admin role" }
          : { decision: "deny", reason: "no rule allows it" },
      });
      if (!allowed) throw httpError(403, "forbidden: scraper may not create nodes/proxy");
    }
    await clock.advance(250);
    await next();
  });
  app.post("/run/:namespace/:pod/:container", (c) => c.body("uid=0\n", 200, { "x-exit-code": "7" }));
  app.get("/metrics", (c) => c.text("ok"));
  app.get("/containerLogs/:namespace/:pod/:container", () => longLived(new Response("line 1\n")));
  app.get("/exec/:namespace/:pod/:container", () =>
    upgradeToWebSocket(new Response("no upgrade", { status: 501 }), {
      protocol: V5_PROTOCOL,
      open(socket) {
        const codec = channelCodec(V5_PROTOCOL);
        void socket.send(codec.encode(CHANNEL.stdout, new TextEncoder().encode("hi")));
        void socket.send(codec.status(exitStatus(2))!);
        socket.close(1000);
      },
      message() {},
      close() {},
    }),
  );
});

test("an allowed run is one ResponseComplete event in audit.k8s.io/v1 form, with the caller, decision and exit code", async () => {
  const request = new Request("http://node/run/default/web/app?cmd=id", {
    method: "POST",
    headers: { authorization: "Bearer admin", "user-agent": "curl/8", "x-forwarded-for": "192.0.2.9" },
  });
  markRemoteAddress(request, "10.0.0.5");
  const response = await app.request(request);
  expect(response.headers.get("audit-id")).toBe("id-1");
  expect(events).toEqual([
    {
      kind: "Event",
      apiVersion: "audit.k8s.io/v1",
      level: "Metadata",
      auditID: "id-1",
      stage: "ResponseComplete",
      requestURI: "/run/default/web/app?cmd=id",
      verb: "create",
      user: { username: "alice", uid: "7", groups: ["ops"] },
      sourceIPs: ["192.0.2.9", "10.0.0.5"],
      userAgent: "curl/8",
      objectRef: { resource: "pods", namespace: "default", name: "web", apiVersion: "v1", subresource: "exec" },
      responseStatus: { metadata: {}, code: 200 },
      requestReceivedTimestamp: "2026-11-28T17:00:00.000000Z",
      stageTimestamp: "2026-11-28T17:00:00.250000Z",
      annotations: {
        "authorization.k8s.io/decision": "allow",
        "authorization.k8s.io/reason": "admin role",
        "kubelet.io/pod": "default/web",
        "kubelet.io/container": "app",
        "kubelet.io/exit-code": "7",
      },
    },
  ]);
});

test("a refused request is audited: 403 with the authorizer's forbid and reason, 401 with the empty user", async () => {
  expect(
    (await app.request("/run/default/web/app?cmd=id", { method: "POST", headers: { authorization: "Bearer scraper" } }))
      .status,
  ).toBe(403);
  expect(
    (await app.request("/containerLogs/default/web/app", { headers: { authorization: "Bearer wrong" } })).status,
  ).toBe(401);
  expect(events.map((e) => [e.stage, e.user, e.responseStatus, e.annotations])).toEqual([
    [
      "ResponseComplete",
      { username: "scraper", uid: "7", groups: ["ops"] },
      {
        metadata: {},
        status: "Failure",
        message: "forbidden: scraper may not create nodes/proxy",
        reason: "Forbidden",
        code: 403,
      },
      {
        "authorization.k8s.io/decision": "forbid",
        "authorization.k8s.io/reason": "no rule allows it",
        "kubelet.io/pod": "default/web",
        "kubelet.io/container": "app",
      },
    ],
    [
      "ResponseComplete",
      {},
      {
        metadata: {},
        status: "Failure",
        message: "Authentication failed, attempted: bearer",
        reason: "Unauthorized",
        code: 401,
      },
      {
        "authorization.k8s.io/decision": "forbid",
        "authorization.k8s.io/reason": "Authentication failed, attempted: bearer",
        "kubelet.io/pod": "default/web",
        "kubelet.io/container": "app",
      },
    ],
  ]);
});

test("with no caller set (authentication not wired) the user is anonymous and the decision allow with no reason", async () => {
  await app.request("/containerLogs/default/web/app");
  expect(events[0]?.user).toEqual({ username: "system:anonymous", groups: ["system:unauthenticated"] });
  expect(events[0]?.annotations).toMatchObject({
    "authorization.k8s.io/decision": "allow",
    "authorization.k8s.io/reason": "",
  });
  expect(events[0]?.verb).toBe("get");
});

test("requests that are not audited write nothing", async () => {
  expect((await app.request("/metrics", { headers: { authorization: "Bearer admin" } })).status).toBe(200);
  expect(events).toEqual([]);
});

test("a followed log is audited when it starts and again when its body ends", async () => {
  const response = await app.request("/containerLogs/default/web/app?follow=true");
  expect(response.headers.get("audit-id")).toBe("id-1");
  // Still marked long-lived, so the server lifts its idle bound for the followed stream.
  expect(isLongLived(response)).toBe(true);
  expect(events.map((e) => e.stage)).toEqual(["RequestReceived"]);
  expect(events[0]?.stageTimestamp).toBe(events[0]!.requestReceivedTimestamp);
  expect(events[0]?.responseStatus).toBeUndefined();
  await clock.advance(5000);
  expect(await response.text()).toBe("line 1\n");
  expect(events.map((e) => [e.stage, e.auditID, e.stageTimestamp, e.responseStatus?.code])).toEqual([
    ["RequestReceived", "id-1", "2026-11-28T17:00:00.000000Z", undefined],
    ["ResponseComplete", "id-1", "2026-11-28T17:00:05.250000Z", 200],
  ]);
});

test("an exec stream is audited as it opens and when it closes, with the exit code its client was sent", async () => {
  const response = await app.request("/exec/default/web/app?command=sh", {
    headers: { authorization: "Bearer admin" },
  });
  expect(events.map((e) => e.stage)).toEqual(["RequestReceived"]);
  const sent: unknown[] = [];
  webSocketSessionOf(response)!.open({ send: async (d) => void sent.push(d), close: () => sent.push("close") });
  expect(sent).toHaveLength(3);
  expect(events.map((e) => e.stage)).toEqual(["RequestReceived", "ResponseComplete"]);
  expect(events[1]?.responseStatus).toEqual({ metadata: {}, code: 101 });
  expect(events[1]?.annotations?.["kubelet.io/exit-code"]).toBe("2");
  expect(events[1]?.verb).toBe("create");
});
