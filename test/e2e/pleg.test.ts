// Container lifecycle events on containerd, the compiled binary against the real daemons: on 1.7 from its
// GetContainerEvents stream (the Evented PLEG, whose relist waits 300 s), on 1.6 from the relist every second. The
// periodic sync is an hour away, so only the PLEG brings a dead container back: each death (killed, OOM-killed,
// exited by itself, while the stream is cut, while the runtime restarts) shows once in the restart count. The
// kubelet talks to containerd through a socket proxy that can cut every connection, as a broken stream would.
import { afterAll, expect } from "bun:test";
import { spawnSync } from "node:child_process";
import { rmSync } from "node:fs";
import { createConnection, createServer, type Socket } from "node:net";
import { join } from "node:path";
import { type ApiPod, type Kubelet, startKubelet, test, waitFor } from "./harness-kubelet.ts";
import { describeOnRuntimes, writePod } from "./harness-runtimes.ts";
import { removeDir, tempDir } from "./harness.ts";

/** A Unix-socket proxy to `upstream` whose cut() drops every open connection (new ones pass again). */
async function cuttableProxy(path: string, upstream: string) {
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const daemon = createConnection(upstream.replace(/^unix:\/\//, ""));
    for (const s of [client, daemon]) {
      sockets.add(s);
      s.on("close", () => sockets.delete(s));
      s.on("error", () => {});
    }
    client.pipe(daemon).pipe(client);
    client.on("close", () => daemon.destroy());
    daemon.on("close", () => client.destroy());
  });
  rmSync(path, { force: true });
  await new Promise<void>((resolve) => server.listen(path, resolve));
  return {
    endpoint: `unix://${path}`,
    cut: () => {
      for (const s of sockets) s.destroy();
    },
    close: () => {
      for (const s of sockets) s.destroy();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

describeOnRuntimes(
  "container lifecycle events",
  (services, rt) => {
    const manifests = tempDir("pleg-manifests");
    const rootDir = tempDir("pleg-root");
    const pods = ["e2e-pleg-killed", "e2e-pleg-oom", "e2e-pleg-exits", "e2e-pleg-cut", "e2e-pleg-restart"];
    const socket = rt.endpoint.replace(/^unix:\/\//, "");
    const daemon = rt.name === "containerd 1.7" ? "containerd17" : "containerd";
    let proxy: Awaited<ReturnType<typeof cuttableProxy>>;
    let kubelet: Kubelet;
    afterAll(async () => {
      await kubelet?.stop("SIGKILL");
      await proxy?.close();
      await rt.removePods(...pods);
      removeDir(manifests);
      removeDir(rootDir);
    });
    const ctr = (...args: string[]) => {
      const run = spawnSync("ctr", ["-a", socket, "-n", "k8s.io", ...args], { encoding: "utf8" });
      if (run.status !== 0) throw new Error(`ctr ${args.join(" ")}: ${run.stderr}`);
      return run.stdout;
    };
    // Each pod's app dies once: a marker in its emptyDir makes the second run sleep.
    const once = (die: string) => `[ -f /data/ran ] && exec sleep 3600; touch /data/ran; ${die}`;
    const pod = (name: string, die: string, resources: Record<string, unknown> = {}) =>
      writePod(manifests, name, {
        terminationGracePeriodSeconds: 0,
        hostNetwork: true,
        containers: [
          {
            name: "app",
            image: services.busybox,
            command: ["sh", "-c", once(die)],
            volumeMounts: [{ name: "data", mountPath: "/data" }],
            ...resources,
          },
        ],
        volumes: [{ name: "data", emptyDir: {} }],
      });
    /** The app's status once it runs again after its one death: restart count 1, the death as last state. */
    const restartedOnce = async (name: string, timeoutMs = 60_000) =>
      appOf(
        await kubelet.waitForPod(
          name,
          "the app running again after one death",
          (p) => {
            const app = p.status?.containerStatuses?.[0];
            return app?.restartCount === 1 && app.state?.running;
          },
          timeoutMs,
        ),
      );
    const appOf = (p: ApiPod) => p.status!.containerStatuses![0]!;
    const running = (name: string) =>
      kubelet.waitForPod(name, "the app running", (p) => appOf(p)?.state?.running, 120_000);
    /** The running task of the pod's app container, as containerd knows it. */
    const task = async (name: string) => {
      const id = (await rt.running(name, "app"))!.id;
      const line = ctr("tasks", "ls")
        .split("\n")
        .find((l) => l.startsWith(`${id} `));
      return { id, pid: Number(line!.trim().split(/\s+/)[1]) };
    };
    const metric = async (name: string) => {
      const text = await (await kubelet.admin("/metrics")).text();
      return Number(text.match(new RegExp(`^${name} (\\S+)$`, "m"))?.[1]);
    };

    test("the kubelet starts the pods through the proxy, its relist at the PLEG's own period", async () => {
      proxy = await cuttableProxy(join(rootDir, "..", `pleg-proxy-${process.pid}.sock`), rt.endpoint);
      pod("e2e-pleg-killed", "exec sleep 3600");
      pod("e2e-pleg-oom", "a=x; while :; do a=$a$a; done", {
        resources: { limits: { memory: "32Mi" }, requests: { memory: "32Mi" } },
      });
      pod("e2e-pleg-exits", "sleep 1; exit 3");
      pod("e2e-pleg-cut", "exec sleep 3600");
      pod("e2e-pleg-restart", "exec sleep 3600");
      const flags = rt.flags(rootDir).map((f) => (f === rt.endpoint ? proxy.endpoint : f));
      kubelet = await startKubelet(["run", "-c", manifests, ...flags, "--sync_frequency", "1h"]);
      for (const name of ["e2e-pleg-killed", "e2e-pleg-cut", "e2e-pleg-restart"]) await running(name);
      if (rt.name === "containerd 1.7") {
        expect(await metric("kubelet_evented_pleg_connection_success_count")).toBeGreaterThanOrEqual(1);
        // The relist behind the stream: the first and the one right after the stream opened, then 300 s apart.
        expect(await metric("kubelet_pleg_relist_duration_seconds_count")).toBeLessThanOrEqual(3);
      } else {
        expect(kubelet.output).toMatch(
          /does not serve GetContainerEvents: .*: relisting every 1s \(the generic PLEG\)/,
        );
        await kubelet.waitFor(
          "a relist each second",
          async () => (await metric("kubelet_pleg_relist_interval_seconds_count")) >= 3,
        );
      }
    }, 180_000);

    test("a container killed runs again, its death counted once", async () => {
      const { pid } = await task("e2e-pleg-killed");
      process.kill(pid, "SIGKILL");
      const app = await restartedOnce("e2e-pleg-killed");
      expect(app.lastState?.terminated?.exitCode).toBe(137);
    }, 90_000);

    test("a container OOM-killed at its memory limit shows OOMKilled once", async () => {
      const app = await restartedOnce("e2e-pleg-oom", 120_000);
      expect(app.lastState?.terminated).toMatchObject({ exitCode: 137, reason: "OOMKilled" });
    }, 150_000);

    test("a container that exits by itself runs again, its exit counted once", async () => {
      const app = await restartedOnce("e2e-pleg-exits");
      expect(app.lastState?.terminated).toMatchObject({ exitCode: 3, reason: "Error" });
    }, 90_000);

    test("a container killed while every connection to the runtime is cut is seen once it is back", async () => {
      const errors = await metric("kubelet_evented_pleg_connection_error_count");
      const { pid } = await task("e2e-pleg-cut");
      proxy.cut();
      process.kill(pid, "SIGKILL");
      const app = await restartedOnce("e2e-pleg-cut");
      expect(app.lastState?.terminated?.exitCode).toBe(137);
      if (rt.name === "containerd 1.7") {
        expect(await metric("kubelet_evented_pleg_connection_error_count")).toBeGreaterThan(errors);
        await kubelet.waitFor("the stream open again", async () =>
          (await metric("kubelet_evented_pleg_connection_success_count")) >= 2 ? true : undefined,
        );
        expect(kubelet.output.match(/container events stream lost/g)).toHaveLength(1);
      }
    }, 90_000);

    test("a container killed while the runtime restarts is seen once the runtime is back", async () => {
      const { pid } = await task("e2e-pleg-restart");
      const daemonPid = Number(spawnSync("cat", [join(services.dir, `${daemon}.pid`)], { encoding: "utf8" }).stdout);
      process.kill(daemonPid, "SIGTERM");
      await waitFor("containerd gone", () => spawnSync("kill", ["-0", String(daemonPid)]).status !== 0 || undefined);
      process.kill(pid, "SIGKILL");
      const resume = spawnSync("bash", [join(import.meta.dir, "../../scripts/services.sh"), "resume", daemon], {
        encoding: "utf8",
        env: { ...process.env, KUBELET_TEST_DIR: services.dir },
      });
      expect(resume.status, resume.stderr).toBe(0);
      const app = await restartedOnce("e2e-pleg-restart", 90_000);
      // 1.7 reports a task that died while it was down with exit code 255 (unknown), 1.6 with the signal's 137.
      expect(app.lastState?.terminated?.exitCode).toBe(rt.name === "containerd 1.7" ? 255 : 137);
    }, 150_000);

    test("after all of it, every pod's one death is still counted once", async () => {
      for (const name of pods) expect([name, appOf((await kubelet.pod(name))!).restartCount]).toEqual([name, 1]);
    });
  },
  ["remote", "remote-1.7"],
);
