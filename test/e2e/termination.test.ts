// How containers end, end to end on each runtime of the matrix: a termination message in /pods, a
// container over its memory limit shown as OOMKilled with an OOMKilling event, and the grace period
// a deleted pod's containers get before they are killed.
import { beforeAll, expect } from "bun:test";
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type Kubelet, test } from "./harness-kubelet.ts";
import { describeOnRuntimes, staticPodNode } from "./harness-runtimes.ts";

interface Terminated {
  exitCode: number;
  reason: string;
  message?: string;
}
interface PodItem {
  metadata: { name: string };
  status?: { containerStatuses?: Array<{ state?: { terminated?: Terminated } }> };
}

describeOnRuntimes("container termination", (services, rt) => {
  const node = staticPodNode("term", services, rt, [
    "e2e-term-message",
    "e2e-term-fallback",
    "e2e-oom",
    "e2e-grace-stubborn",
    "e2e-grace-prompt",
  ]);
  const { manifests } = node;
  let kubelet: Kubelet;
  const pod = (name: string, container: string, graceSeconds = 1) =>
    writeFileSync(
      join(manifests, `${name}.yaml`),
      `apiVersion: v1
kind: Pod
metadata: { name: ${name} }
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: ${graceSeconds}
  containers:
${container}`,
    );
  const terminated = (name: string) =>
    kubelet.waitFor(`${name} terminated`, async () => {
      const list = (await (await kubelet.api("/pods")).json()) as { items: PodItem[] };
      return list.items.find((p) => p.metadata.name === name)?.status?.containerStatuses?.[0]?.state?.terminated;
    });

  beforeAll(async () => {
    pod(
      "e2e-term-message",
      `    - name: app
      image: ${services.busybox}
      command: ["sh", "-c", "echo 'cannot open /etc/app.conf' > /dev/termination-log; exit 3"]
`,
    );
    pod(
      "e2e-term-fallback",
      `    - name: app
      image: ${services.busybox}
      terminationMessagePolicy: FallbackToLogsOnError
      command: ["sh", "-c", "echo starting; echo 'fatal: no database'; exit 1"]
`,
    );
    pod(
      "e2e-oom",
      `    - name: hog
      image: ${services.busybox}
      command: ["sh", "-c", "s=x; while true; do s=$s$s; done"]
      resources: { limits: { memory: 16Mi } }
`,
    );
    kubelet = await node.start();
  });

  test("what a container writes to /dev/termination-log is its terminated state's message in /pods", async () => {
    expect(await terminated("e2e-term-message")).toMatchObject({
      exitCode: 3,
      reason: "Error",
      message: "cannot open /etc/app.conf\n",
    });
  });

  test("FallbackToLogsOnError shows a failed container's last log lines", async () => {
    expect((await terminated("e2e-term-fallback")).message).toBe("starting\nfatal: no database\n");
  });

  test("a container exceeding its memory limit shows OOMKilled and a Warning OOMKilling event", async () => {
    expect(await terminated("e2e-oom")).toMatchObject({ reason: "OOMKilled", exitCode: 137 });
    const event = await kubelet.waitFor("an OOMKilling event", async () => {
      const list = (await (await kubelet.api("/events")).json()) as {
        items: Array<{ type: string; reason: string; message: string; involvedObject: { name: string } }>;
      };
      return list.items.find((e) => e.reason === "OOMKilling" && e.involvedObject.name === "e2e-oom");
    });
    expect(event).toMatchObject({
      type: "Warning",
      message: "Memory cgroup out of memory: container hog was killed at its memory limit 16Mi (exit code 137)",
    });
  });

  test("a deleted pod's container that ignores SIGTERM is killed when its grace period ends; one that exits on it is not held", async () => {
    // sh as PID 1 ignores a signal it has no trap for: the empty trap makes the ignoring explicit.
    const loop = (trap: string) => `    - name: app
      image: ${services.busybox}
      command: ["sh", "-c", "trap '${trap}' TERM; while true; do sleep 0.1; done"]
`;
    pod("e2e-grace-stubborn", loop(""), 4);
    pod("e2e-grace-prompt", loop("exit 0"), 30);
    for (const name of ["e2e-grace-stubborn", "e2e-grace-prompt"])
      await kubelet.waitFor(`${name} running`, () => rt.running(name, "app"), 60_000);
    const deleted = Date.now();
    rmSync(join(manifests, "e2e-grace-stubborn.yaml"));
    rmSync(join(manifests, "e2e-grace-prompt.yaml"));
    const stopped = (name: string) =>
      kubelet
        .waitFor(`${name} stopped`, async () => !(await rt.running(name, "app")), 40_000)
        .then(() => Date.now() - deleted);
    const [stubborn, prompt] = await Promise.all([stopped("e2e-grace-stubborn"), stopped("e2e-grace-prompt")]);
    expect(stubborn).toBeGreaterThanOrEqual(4_000);
    expect(stubborn).toBeLessThan(9_000);
    expect(prompt).toBeLessThan(4_000);
  }, 120_000);
});
