// How containers end, end to end on the real dockerd: a termination message in /pods, and a
// container over its memory limit shown as OOMKilled with an OOMKilling event.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describeWithServices } from "../../lib/testing/services.ts";
import { baseFlags, freePort, KubeletProcess, removeDir, removePods, tempDir, waitFor } from "./harness.ts";

interface Terminated {
  exitCode: number;
  reason: string;
  message?: string;
}
interface PodItem {
  metadata: { name: string };
  status?: { containerStatuses?: Array<{ state?: { terminated?: Terminated } }> };
}

describeWithServices("container termination", (services) => {
  const manifests = tempDir("term-manifests");
  const rootDir = tempDir("term-root");
  let kubelet: KubeletProcess;
  let port = 0;
  const pod = (name: string, container: string) =>
    writeFileSync(
      join(manifests, `${name}.yaml`),
      `apiVersion: v1
kind: Pod
metadata: { name: ${name} }
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  containers:
${container}`,
    );
  const terminated = (name: string) =>
    waitFor(`${name} terminated`, async () => {
      const list = (await (await fetch(`http://127.0.0.1:${port}/pods`)).json()) as { items: PodItem[] };
      return list.items.find((p) => p.metadata.name === name)?.status?.containerStatuses?.[0]?.state?.terminated;
    });

  beforeAll(async () => {
    port = await freePort();
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
    kubelet = new KubeletProcess([
      "run",
      "-c",
      manifests,
      ...baseFlags(services, rootDir),
      "--port",
      String(port),
      "--network_container_image",
      services.pause,
    ]);
  });
  afterAll(async () => {
    await kubelet?.stop("SIGKILL");
    removePods(services, "e2e-term-message", "e2e-term-fallback", "e2e-oom");
    removeDir(manifests);
    removeDir(rootDir);
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
    const event = await waitFor("an OOMKilling event", async () => {
      const list = (await (await fetch(`http://127.0.0.1:${port}/events`)).json()) as {
        items: Array<{ type: string; reason: string; message: string; involvedObject: { name: string } }>;
      };
      return list.items.find((e) => e.reason === "OOMKilling" && e.involvedObject.name === "e2e-oom");
    });
    expect(event).toMatchObject({
      type: "Warning",
      message: "Memory cgroup out of memory: container hog was killed at its memory limit 16Mi (exit code 137)",
    });
  });
});
