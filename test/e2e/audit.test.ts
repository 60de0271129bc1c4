// The audit log of the compiled binary: an exec, a log read, a pod push and a refused request, each read
// back from --audit_log_path as audit.k8s.io/v1 Events whose field names are upstream's.
import { afterAll, beforeAll, expect } from "bun:test";
import { readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { connectChannels } from "../../lib/testing/channel-client.ts";
import { describeWithServices } from "../../lib/testing/services.ts";
import { killKubeletsAfterAll, test, waitFor, type Kubelet } from "./harness-kubelet.ts";
import { runtimeUnderTest, staticPodNode } from "./harness-runtimes.ts";
import { removeDir, tempDir } from "./harness.ts";

// Field names of staging/src/k8s.io/apiserver/pkg/apis/audit/v1/types.go (Event, ObjectReference) and of
// k8s.io/api/authentication/v1 UserInfo and metav1.Status, written here from upstream, not from our writer.
const words = (text: string) => text.split(" ");
const EVENT_FIELDS = words(
  "kind apiVersion level auditID stage requestURI verb user impersonatedUser sourceIPs userAgent objectRef " +
    "responseStatus requestObject responseObject requestReceivedTimestamp stageTimestamp annotations",
);
const REQUIRED = words("level auditID stage requestURI verb user requestReceivedTimestamp stageTimestamp");
const OBJECT_REF_FIELDS = words("resource namespace name uid apiGroup apiVersion resourceVersion subresource");
const USER_FIELDS = words("username uid groups extra");
const STATUS_FIELDS = words("kind apiVersion metadata status message reason details code");
const MICRO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;

interface Event {
  [field: string]: unknown;
  stage: string;
  requestURI: string;
  user: Record<string, unknown>;
  objectRef?: Record<string, unknown>;
  responseStatus?: { code: number; message?: string };
  annotations?: Record<string, string>;
}

/** Parses one line as an audit.k8s.io/v1 Event, failing on any field upstream's types do not have. */
function parseEvent(line: string): Event {
  const event = JSON.parse(line) as Event;
  expect(event.kind).toBe("Event");
  expect(event.apiVersion).toBe("audit.k8s.io/v1");
  expect(EVENT_FIELDS).toEqual(expect.arrayContaining(Object.keys(event)));
  for (const field of REQUIRED) expect(event).toHaveProperty(field);
  expect(["None", "Metadata", "Request", "RequestResponse"]).toContain(event.level as string);
  expect(["RequestReceived", "ResponseStarted", "ResponseComplete", "Panic"]).toContain(event.stage);
  expect(event.requestReceivedTimestamp).toMatch(MICRO_TIME);
  expect(event.stageTimestamp).toMatch(MICRO_TIME);
  expect(USER_FIELDS).toEqual(expect.arrayContaining(Object.keys(event.user)));
  if (event.objectRef) expect(OBJECT_REF_FIELDS).toEqual(expect.arrayContaining(Object.keys(event.objectRef)));
  if (event.responseStatus) expect(STATUS_FIELDS).toEqual(expect.arrayContaining(Object.keys(event.responseStatus)));
  return event;
}

const POD = "e2e-audit";
const PUSHED = "e2e-audit-pushed";

describeWithServices("audit log", (services) => {
  const rt = runtimeUnderTest(services, "docker");
  const node = staticPodNode("audit", services, rt, [POD, PUSHED]);
  const logDir = tempDir("audit-log");
  const auditLog = join(logDir, "audit.log");
  const tokens = join(logDir, "tokens");
  const auth = { authorization: "Bearer e2e-audit-token" };
  let kubelet: Kubelet;
  const events = () => readFileSync(auditLog, "utf8").split("\n").filter(Boolean).map(parseEvent);

  beforeAll(async () => {
    writeFileSync(tokens, "e2e-audit-token\n");
    node.write(POD, {
      terminationGracePeriodSeconds: 1,
      containers: [{ name: "app", image: services.busybox, command: ["sh", "-c", "echo ready; sleep 3600"] }],
    });
    kubelet = await node.start(["--auth_token_file", tokens, "--audit_log_path", auditLog]);
    await waitFor("the sleeper running", () => rt.running(POD, "app"), 60_000);
  });
  afterAll(() => removeDir(logDir));
  killKubeletsAfterAll();
  afterAll(() => rt.close());

  test("an exec is audited when it opens and when it ends, with the caller, the container and its exit code", async () => {
    const client = await connectChannels(
      kubelet.url(`/exec/default/${POD}/app?command=sh&command=-c&command=exit%204&output=1`),
      { headers: { ...auth, "user-agent": "e2e-audit" } },
    );
    expect((await client.finished).status?.reason).toBe("NonZeroExitCode");
    const exec = await waitFor("the exec's ResponseComplete", () => {
      const found = events().filter((e) => e.requestURI.startsWith(`/exec/default/${POD}/app`));
      return found.length === 2 ? found : undefined;
    });
    expect(exec.map((e) => e.stage)).toEqual(["RequestReceived", "ResponseComplete"]);
    expect(exec[0]!.auditID).toBe(exec[1]!.auditID);
    const done = exec[1]!;
    expect(done.objectRef).toEqual({
      resource: "pods",
      namespace: "default",
      name: POD,
      apiVersion: "v1",
      subresource: "exec",
    });
    expect(done.responseStatus?.code).toBe(101);
    expect(done.userAgent).toBe("e2e-audit");
    expect(done.sourceIPs).toEqual(["127.0.0.1"]);
    expect(done.annotations).toMatchObject({
      "authorization.k8s.io/decision": "allow",
      "kubelet.io/pod": `default/${POD}`,
      "kubelet.io/container": "app",
      "kubelet.io/exit-code": "4",
    });
    // The log is for root alone.
    expect(statSync(auditLog).mode & 0o777).toBe(0o600);
  }, 30_000);

  test("a container log read, a pod push and a request with a wrong token are one ResponseComplete event each", async () => {
    expect((await kubelet.api(`/containerLogs/default/${POD}/app`, { headers: auth })).status).toBe(200);
    const pushed = await kubelet.api("/pods", {
      method: "POST",
      headers: { ...auth, "content-type": "application/json" },
      body: JSON.stringify({
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name: PUSHED, namespace: "default" },
        spec: { containers: [{ name: "app", image: services.busybox, command: ["sleep", "3600"] }] },
      }),
    });
    expect(pushed.status).toBe(201);
    const refused = await kubelet.api(`/run/default/${POD}/app?cmd=id`, {
      method: "POST",
      headers: { authorization: "Bearer wrong" },
    });
    expect(refused.status).toBe(401);

    const [logs, push, denied] = await waitFor("three more events", () => {
      const later = events().filter((e) => !e.requestURI.startsWith("/exec/"));
      return later.length === 3 ? later : undefined;
    });
    expect([logs!.stage, push!.stage, denied!.stage]).toEqual([
      "ResponseComplete",
      "ResponseComplete",
      "ResponseComplete",
    ]);
    expect(logs!.objectRef).toMatchObject({ resource: "pods", name: POD, subresource: "log" });
    expect(logs!.responseStatus?.code).toBe(200);
    expect(push!.requestURI).toBe("/pods");
    expect(push!.verb).toBe("create");
    expect(push!.objectRef).toMatchObject({ resource: "pods" });
    expect(push!.responseStatus?.code).toBe(201);
    expect(denied!.responseStatus).toMatchObject({ code: 401, message: "Authentication failed, attempted: bearer" });
    expect(denied!.user).toEqual({});
    expect(denied!.annotations?.["authorization.k8s.io/decision"]).toBe("forbid");
  }, 30_000);
});
