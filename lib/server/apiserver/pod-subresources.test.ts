// The API's streaming subresources on a recording stand-in for the kubelet's routes: what each request becomes.
import { describe, expect, test } from "bun:test";
import { Hono } from "hono";
import { testPod } from "../../testing/pods.ts";
import { createPodSubresourceRoutes } from "./pod-subresources.ts";

const single = testPod("web");
const multi = testPod("duo");
multi.spec.containers = [
  { ...multi.spec.containers[0]!, name: "a" },
  { ...multi.spec.containers[0]!, name: "b" },
];
const handed: Request[] = [];
const app = new Hono();
app.onError((error, c) => c.json({ message: error.message }, (error as { status?: 400 }).status ?? 500));
app.route(
  "/",
  createPodSubresourceRoutes({
    pods: () => [single, multi],
    kubelet: (request) => {
      handed.push(request);
      return new Response("from the kubelet");
    },
  }),
);

/** The kubelet URL (path and query) a request was handed to. */
async function handedFor(path: string, init?: RequestInit): Promise<string> {
  handed.length = 0;
  const response = await app.request(path, init);
  expect(response.status).toBe(200);
  const url = new URL(handed[0]!.url);
  return `${url.pathname}${url.search}`;
}

async function refusal(path: string): Promise<{ status: number; message: string }> {
  const response = await app.request(path);
  return { status: response.status, message: ((await response.json()) as { message: string }).message };
}

const base = "/api/v1/namespaces/default/pods";

describe("pod subresources", () => {
  test("log goes to /containerLogs for the pod's only container, with PodLogOptions in the kubelet's names", async () => {
    expect(await handedFor(`${base}/web/log?follow=true&tailLines=5&timestamps=1&limitBytes=10&previous=false`)).toBe(
      "/containerLogs/default/web/app?follow=true&timestamps=true&tailLines=5&limitBytes=10",
    );
  });

  test("log of a pod of several containers needs one named, worded as kube-apiserver's", async () => {
    expect(await refusal(`${base}/duo/log`)).toEqual({
      status: 400,
      message: "a container name must be specified for pod duo, choose one of: [a b]",
    });
    expect(await handedFor(`${base}/duo/log?container=b`)).toBe("/containerLogs/default/duo/b");
  });

  test("a container the pod does not have, and a pod the node does not have, are refused", async () => {
    expect(await refusal(`${base}/duo/log?container=c`)).toEqual({
      status: 400,
      message: "container c is not valid for pod duo",
    });
    expect(await refusal(`${base}/gone/log`)).toEqual({ status: 404, message: 'pods "gone" not found' });
  });

  test("sinceTime and sinceSeconds together are refused; a sinceTime that is no time names the field", async () => {
    expect((await refusal(`${base}/web/log?sinceSeconds=5&sinceTime=2026-01-01T00:00:00Z`)).status).toBe(400);
    expect(await refusal(`${base}/web/log?sinceTime=yesterday`)).toEqual({
      status: 400,
      message: 'sinceTime: Invalid value: "yesterday": must be an RFC3339 time',
    });
  });

  test("exec keeps the command's arguments in order and turns stdin/stdout/stderr/tty into input/output/error/tty", async () => {
    expect(
      await handedFor(
        `${base}/duo/exec?container=a&command=sh&command=-c&command=echo%20a%20b&stdin=true&stdout=True&stderr=False&tty=1`,
      ),
    ).toBe("/exec/default/duo/a?command=sh&command=-c&command=echo+a+b&input=1&output=1&tty=1");
  });

  test("exec without a command, or with a boolean that is none, says what to give", async () => {
    expect(await refusal(`${base}/web/exec?stdout=true`)).toEqual({
      status: 400,
      message: "you must specify at least 1 command: give ?command=… once per argument",
    });
    expect(await refusal(`${base}/web/exec?command=ls&stdout=yes`)).toEqual({
      status: 400,
      message: 'stdout: Invalid value: "yes": must be true or false',
    });
  });

  test("attach goes to /attach, and POST (SPDY clients) is handed on as the GET the kubelet's route serves", async () => {
    expect(await handedFor(`${base}/web/attach?stdout=true`, { method: "POST" })).toBe(
      "/attach/default/web/app?output=1",
    );
    expect(handed[0]!.method).toBe("GET");
  });

  test("portforward's ports become the kubelet's port query, and the upgrade headers travel with the request", async () => {
    expect(
      await handedFor(`${base}/web/portforward?ports=80,443`, {
        headers: { upgrade: "websocket", "sec-websocket-protocol": "SPDY/3.1+portforward.k8s.io" },
      }),
    ).toBe("/portForward/default/web?port=80%2C443");
    expect(handed[0]!.headers.get("sec-websocket-protocol")).toBe("SPDY/3.1+portforward.k8s.io");
  });
});
