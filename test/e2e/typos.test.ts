// A typo in a running pod's manifest, end to end on each runtime of the matrix: whatever the edit breaks
// (apiVersion, kind, the name, an unknown field, the YAML, a quantity), the running container is the same one
// afterwards, the log, /events and /pods say the last good version keeps running, and the fixed file applies.
import { afterAll, beforeAll, expect } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describeOnRuntimes, type Kubelet, removeDir, startKubelet, tempDir, test } from "./harness.ts";

const POD = "e2e-typo";

/** The pod's manifest: a container printing `greeting` (each row's fix is a new greeting, so a new container). */
const manifest = (image: string, greeting: string) => `apiVersion: v1
kind: Pod
metadata:
  name: ${POD}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: ${image}
    command: ["sh", "-c", "echo ${greeting}; exec sleep 3600"]
    resources: { limits: { memory: 64Mi } }
`;

/** Each row breaks the good manifest one way; `path` is the field its rejection names. */
const TYPOS: Array<{ name: string; edit: (good: string) => string; path: string }> = [
  { name: "apiVersion: v2", edit: (good) => good.replace("apiVersion: v1", "apiVersion: v2"), path: "apiVersion" },
  { name: "kind: Pdo", edit: (good) => good.replace("kind: Pod", "kind: Pdo"), path: "kind" },
  {
    name: "an invalid metadata.name",
    edit: (good) => good.replace(`name: ${POD}`, "name: e2e_typo"),
    path: "metadata.name",
  },
  {
    name: "an unknown field (comand:)",
    edit: (good) => good.replace("command:", "comand:"),
    path: "spec.containers[0].comand",
  },
  {
    name: "YAML that does not parse",
    edit: (good) => good.replace('exec sleep 3600"]', 'exec sleep 3600"'),
    path: "<document>",
  },
  {
    name: "a bad quantity",
    edit: (good) => good.replace("memory: 64Mi", "memory: 64Mb"),
    path: "spec.containers[0].resources.limits[memory]",
  },
];

interface LogLine {
  level: string;
  msg: string;
}

describeOnRuntimes("a typo in a running pod's manifest", (services, rt) => {
  const manifests = tempDir("typo-manifests");
  const rootDir = tempDir("typo-root");
  const file = join(manifests, "typo.yaml");
  let kubelet: Kubelet;
  let version = 0;
  /** The log lines printed since `from` (an offset in the kubelet's output). */
  const linesSince = (from: number): LogLine[] =>
    kubelet.output
      .slice(from)
      .split("\n")
      .filter((line) => line.startsWith("{"))
      .map((line) => JSON.parse(line) as LogLine);
  /** Writes a good manifest with a new greeting and resolves with the id of the container it runs. */
  const writeGood = async () => {
    const greeting = `v${++version}`;
    writeFileSync(file, manifest(services.busybox, greeting));
    const container = await kubelet.waitFor(`the container saying ${greeting}`, async () => {
      const running = await rt.running(POD, "app");
      const logs = running && (await (await kubelet.admin(`/containerLogs/default/${POD}/app`)).text());
      return logs === `${greeting}\n` ? running : undefined;
    });
    return { id: container.id, good: manifest(services.busybox, greeting) };
  };

  beforeAll(async () => {
    writeFileSync(file, manifest(services.busybox, "v0"));
    kubelet = await startKubelet([...rt.runFlags(manifests, rootDir), "--file_check_frequency", "1s"]);
  });

  afterAll(async () => {
    await kubelet?.stop("SIGKILL");
    await rt.removePods(POD);
    removeDir(manifests);
    removeDir(rootDir);
  });

  for (const typo of TYPOS)
    test(`${typo.name}: the same container keeps running, the log, /events and /pods say so, and the fixed file applies`, async () => {
      const { id, good } = await writeGood();
      const from = kubelet.output.length;
      writeFileSync(file, typo.edit(good));
      const refused = await kubelet.waitFor("the edit refused", () =>
        linesSince(from).find((l) => l.msg.startsWith("refusing the edit of ") && l.msg.includes(typo.path)),
      );
      expect(refused.msg).toContain("keeping the last good version");
      const events = (await (await kubelet.api("/events")).json()) as {
        items: Array<{ reason: string; message: string; involvedObject: { name: string } }>;
      };
      expect(
        events.items.find(
          (e) => e.reason === "FailedValidation" && e.involvedObject.name === POD && e.message.includes(typo.path),
        )?.message,
      ).toContain("keeping the last good version");
      expect((await rt.running(POD, "app"))?.id).toBe(id);
      const served = (await (await kubelet.api(`/pods/default/${POD}`)).json()) as {
        metadata: { annotations: Record<string, string> };
      };
      expect(served.metadata.annotations["kubelet.io/refused-edit"]).toContain(typo.path);
      // The fix: a good manifest again (a new greeting), which replaces the container as any edit does.
      const fixed = await writeGood();
      expect(fixed.id).not.toBe(id);
      const again = (await (await kubelet.api(`/pods/default/${POD}`)).json()) as {
        metadata: { annotations: Record<string, string> };
      };
      expect(again.metadata.annotations["kubelet.io/refused-edit"]).toBeUndefined();
      // The typo never stopped the pod: no line since it said so, though the fix has been applied since.
      expect(
        linesSince(from).filter(
          (l) => l.msg.includes(`pod default/${POD} `) && /no longer wanted|was rejected/.test(l.msg),
        ),
      ).toEqual([]);
    });
});
