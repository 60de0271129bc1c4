// An operator's mistakes in the pod sources, end to end on each runtime of the matrix: a restart with
// a mistyped -c path or with a KubeletConfiguration given as -c stops nothing (the source is not ready,
// /healthz?verbose says why), and the pod is adopted as it runs once the path is right again;
// runonce, plan and validate on a missing path exit 1 naming it; and run logs each step of a pod at the default level.
import { afterAll, expect } from "bun:test";
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import {
  describeOnRuntimes,
  docker,
  freePort,
  Kubelet,
  removeDir,
  runBinary,
  startKubelet,
  tempDir,
  test,
} from "./harness.ts";
import { KUBELET_BINARY } from "../../lib/testing/services.ts";

/** `text` matched literally inside a RegExp. */
const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/** How a string appears inside a JSON log line. */
const inJson = (text: string) => JSON.stringify(text).slice(1, -1);

describeOnRuntimes("an operator's first hour", (services, rt) => {
  const rootDir = tempDir("operator-root");
  const base = tempDir("operator-manifests");
  const manifests = join(base, "manifests");
  const name = "e2e-operator-keep";
  /** A pod that sleeps in `image`. */
  const sleeper = (pod: string, image: string, grace = 1) => `apiVersion: v1
kind: Pod
metadata: { name: ${pod} }
spec:
  terminationGracePeriodSeconds: ${grace}
  containers:
    - { name: app, image: "${image}", command: ["sleep", "3600"] }
`;
  const manifest = sleeper(name, services.busybox);
  /** A fresh directory under `base` holding `pod`'s manifest. */
  const podDir = (pod: string, image: string, grace?: number) => {
    const dir = join(base, pod);
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, `${pod}.yaml`), sleeper(pod, image, grace));
    return dir;
  };
  /** Pushes `image` to the loopback registry and drops dockerd's copy, so a kubelet must pull it. */
  const publish = (image: string) => {
    docker(services, "push", image);
    docker(services, "rmi", image);
  };
  const kubeletConfiguration =
    "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nstaticPodPath: /etc/kubelet/manifests\n";
  const flags = [...rt.flags(rootDir), "--sync_frequency", "1s", "--file_check_frequency", "1s"];
  afterAll(async () => {
    await rt.removePods(name);
    removeDir(rootDir);
    removeDir(base);
  });

  /** Runs the pod from `manifests` and returns its container's id. */
  const runThePod = async () => {
    mkdirSync(manifests, { recursive: true });
    writeFileSync(join(manifests, "keep.yaml"), manifest);
    const kubelet = await startKubelet(["run", "-c", manifests, ...flags]);
    const pod = await kubelet.waitForPod(name, "running", (p) => p.status?.containerStatuses?.[0]?.state?.running);
    await kubelet.stop();
    return pod.status!.containerStatuses![0]!.containerID;
  };

  /** A kubelet whose -c is wrong: it says so, /healthz?verbose names the source, and a full sync runs. */
  const startMistaken = async (path: string, said: string) => {
    const kubelet = new Kubelet(["run", "-c", path, ...flags], await freePort());
    await kubelet.waitFor("the not-ready warning", () => kubelet.output.includes(inJson(said)));
    const verbose = await kubelet.waitFor("a sync while the source is not ready", async () => {
      const text = await (await kubelet.api("/healthz?verbose")).text();
      return text.includes("[+]syncloop ok") ? text : undefined;
    });
    expect(verbose).toContain(`[-]sources failed: file: `);
    expect(verbose).toContain(said);
    return kubelet;
  };

  const adopted = async (kubelet: Kubelet, containerID: string | undefined) => {
    const pod = await kubelet.waitForPod(name, "running", (p) => p.status?.containerStatuses?.[0]?.state?.running);
    expect(pod.status!.containerStatuses![0]!.containerID).toBe(containerID);
    expect(pod.status!.containerStatuses![0]!.restartCount).toBe(0);
    await kubelet.stop();
  };

  test("a running pod survives a restart with a mistyped -c path, and is adopted once the path appears", async () => {
    const containerID = await runThePod();
    const typo = join(base, "manifets");
    const kubelet = await startMistaken(typo, `manifest path "${typo}" does not exist`);
    expect(kubelet.output).toContain("check -c/--config for a typo");
    renameSync(manifests, typo);
    await adopted(kubelet, containerID);
    renameSync(typo, manifests);
  }, 120_000);

  test("a running pod survives a restart with a KubeletConfiguration given as -c, and the log says --config_file", async () => {
    const containerID = await runThePod();
    const configFile = join(base, "kubelet-config.yaml");
    writeFileSync(configFile, kubeletConfiguration);
    const kubelet = await startMistaken(configFile, `"${configFile}" is a KubeletConfiguration, not a pod manifest`);
    expect(kubelet.output).toContain("pass it with --config_file");
    writeFileSync(configFile, manifest);
    await adopted(kubelet, containerID);
  }, 120_000);

  test("run logs each step of a new pod at the default level: pulling, pulled, created, started, then killing with its grace period", async () => {
    const image = `${services.registry}/operator/app${Date.now()}:1`;
    docker(services, "tag", services.busybox, image);
    publish(image);
    const dir = podDir("e2e-operator-steps", image, 2);
    const kubelet = await startKubelet(["run", "-c", dir, ...flags]);
    try {
      await kubelet.waitForPod(
        "e2e-operator-steps",
        "running",
        (p) => p.status?.containerStatuses?.[0]?.state?.running,
      );
      const steps = () =>
        kubelet.output
          .split("\n")
          .filter((l) => l.startsWith("{"))
          .map((l) => JSON.parse(l) as { level: string; msg: string; pod?: string })
          .filter((l) => l.pod === "default/e2e-operator-steps" && l.level === "info")
          .map((l) => l.msg.replace(/ in [\d.]+s/, " in Ns"));
      await kubelet.waitFor("the Started line", () => steps().some((s) => s.includes("Started container app")));
      expect(steps()).toEqual([
        `default/e2e-operator-steps: Pulling image "${image}"`,
        `default/e2e-operator-steps: Successfully pulled image "${image}" in Ns`,
        "default/e2e-operator-steps: Created container app",
        "default/e2e-operator-steps: Started container app",
      ]);
      rmSync(join(dir, "e2e-operator-steps.yaml"));
      await kubelet.waitFor("the Killing line", () =>
        steps().some((s) => s.startsWith("default/e2e-operator-steps: Stopping")),
      );
      expect(steps().at(-1)).toBe("default/e2e-operator-steps: Stopping container app (grace period 2s)");
    } finally {
      await kubelet.stop();
      await rt.removePods("e2e-operator-steps");
    }
  }, 120_000);

  test("runonce on a terminal (under script) shows each image's pull in place, with bytes and percent where the runtime tells them", async () => {
    const image = `${services.registry}/operator/big${Date.now()}:1`;
    const context = join(base, "big-image");
    mkdirSync(context, { recursive: true });
    writeFileSync(join(context, "blob"), randomBytes(8_000_000));
    writeFileSync(join(context, "Dockerfile"), `FROM ${services.busybox}\nCOPY blob /blob\n`);
    docker(services, "build", "-q", "-t", image, context);
    publish(image);
    const dir = podDir("e2e-operator-big", image);
    try {
      const command = [KUBELET_BINARY, "runonce", "-c", dir, ...rt.flags(rootDir)].join(" ");
      const result = spawnSync("script", ["-qec", `${command} 2>/dev/null`, "/dev/null"], {
        encoding: "utf8",
        timeout: 120_000,
      });
      const shown = result.stdout.replace(/\r/g, "");
      expect(shown).toContain(`\x1b[2Kpulling ${image}\n`);
      if (rt.kind === "docker")
        expect(shown).toMatch(
          new RegExp(`\x1b\\[1F\x1b\\[2Kpulling ${escape(image)}  [\\d.]+ [kMG]?B of 8\\.0 MB \\(\\d+%\\)`),
        );
      expect(shown).toMatch(new RegExp(`\x1b\\[2Kpulled ${escape(image)} \\([\\d.]+ MB\\) in [\\d.]+s\n`));
      expect(shown).toContain("\x1b[2K1/1 pods settled\n");
      expect(shown).toContain("1 pods running or completed");
    } finally {
      await rt.removePods("e2e-operator-big");
    }
  }, 120_000);

  test("runonce, plan and validate on a missing path exit 1 naming it", () => {
    const missing = join(base, "nope");
    const runonce = runBinary(["runonce", "-c", missing, ...rt.flags(rootDir)]);
    expect({ code: runonce.code, stderr: runonce.stderr }).toEqual({
      code: 1,
      stderr: expect.stringContaining(`manifest path "${missing}" does not exist`),
    });
    expect(runonce.stdout).not.toContain("pods running or completed");
    const plan = runBinary(["plan", "-c", missing, ...rt.flags(rootDir)]);
    expect({ code: plan.code, stderr: plan.stderr }).toEqual({
      code: 1,
      stderr: expect.stringContaining(`manifest path "${missing}" does not exist`),
    });
    const validate = runBinary(["validate", missing]);
    expect({ code: validate.code, stdout: validate.stdout }).toEqual({
      code: 1,
      stdout: expect.stringContaining(`FAIL ${missing}: cannot read: no such file or directory`),
    });
  });
});
