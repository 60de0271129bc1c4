import { describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ConfigError, resolveConfig } from "./config.ts";
import { FLAGS } from "./flags.ts";
import { commentedConfigFile, printConfig } from "./print-config.ts";

const file = join(import.meta.dir, "../../testdata/config/kubelet.yaml");

/** Runs `check` on a config file holding `text`, removed afterwards. */
function withConfigFile(text: string, check: (path: string) => void): void {
  const dir = mkdtempSync(join(tmpdir(), "kubelet-config-"));
  try {
    const path = join(dir, "kubelet.yaml");
    writeFileSync(path, text);
    check(path);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe("eviction and GC settings", () => {
  test("take the modern kubelet's defaults", () => {
    expect(resolveConfig({}).config).toMatchObject({
      imageGcHighThreshold: 85,
      imageGcLowThreshold: 80,
      minimumImageTtlDuration: 120_000,
      minimumContainerTtlDuration: 0,
      maximumDeadContainers: -1,
      evictionHard: {
        "memory.available": "100Mi",
        "nodefs.available": "10%",
        "nodefs.inodesFree": "5%",
        "imagefs.available": "15%",
      },
      evictionPressureTransitionPeriod: 300_000,
    });
  });
  test("read thresholds from the flag form and the KubeletConfiguration mapping", () => {
    expect(resolveConfig({ evictionHard: "memory.available<1Gi,nodefs.inodesFree<5%" }).config.evictionHard).toEqual({
      "memory.available": "1Gi",
      "nodefs.inodesFree": "5%",
    });
    expect(
      resolveConfig({ evictionSoft: "memory.available<300Mi", evictionSoftGracePeriod: "memory.available=1m30s" })
        .config.evictionSoftGracePeriod,
    ).toEqual({ "memory.available": "1m30s" });
    expect(resolveConfig({}, file).config.evictionHard).toEqual({ "memory.available": "200Mi" });
    expect(resolveConfig({ evictionHard: 0 }).config.evictionHard).toEqual({});
  });
  test("reject a malformed threshold, a low threshold above the high one, a percentage over 100 and a non-integer limit", () => {
    expect(() => resolveConfig({ evictionHard: "memory.available" })).toThrow(
      /for --eviction_hard: expected "signal<quantity" pairs/,
    );
    expect(() => resolveConfig({ imageGcLowThreshold: "90" })).toThrow(
      "--image_gc_low_threshold (90) must not be above --image_gc_high_threshold (85)",
    );
    expect(() => resolveConfig({ imageGcHighThreshold: "101" })).toThrow(/expected a percentage from 0 to 100/);
    expect(() => resolveConfig({ maximumDeadContainers: "some" })).toThrow(/expected an integer/);
  });
  test("refuse an unknown eviction signal and a soft grace period without its threshold while resolving, before anything starts", () => {
    expect(() => resolveConfig({ evictionHard: "memory.avail<1Gi" })).toThrow(
      'unsupported eviction signal "memory.avail"',
    );
    expect(() => resolveConfig({ evictionSoftGracePeriod: "memory.available=1m" })).toThrow(
      "memory.available has a grace period but no --eviction_soft threshold",
    );
  });
});

describe("precedence: defaults < config file < flags", () => {
  test("keeps the original kubelet's defaults when nothing is given", () => {
    const { config, origins } = resolveConfig({});
    expect(config).toMatchObject({
      syncFrequency: 10_000,
      fileCheckFrequency: 20_000,
      port: 10250,
      address: "127.0.0.1",
      enableServer: true,
      rootDir: "/var/lib/kubelet",
      registryBurst: 10,
    });
    expect(Object.values(origins).every((o) => o === "default")).toBe(true);
  });

  test("takes values from the config file, KubeletConfiguration names included", () => {
    const { config, origins } = resolveConfig({}, file);
    expect(config).toMatchObject({
      config: "/etc/kubelet/manifests",
      syncFrequency: 30_000,
      fileCheckFrequency: 5000,
      port: 10255,
      registryQps: 5,
    });
    expect(config.manifestUrlHeader).toEqual({ Authorization: ["Bearer abc"] });
    expect(origins.syncFrequency).toBe("file");
  });

  test("lets flags override the config file", () => {
    const { config, origins } = resolveConfig({ syncFrequency: "1m", port: "1234" }, file);
    expect(config.syncFrequency).toBe(60_000);
    expect(config.port).toBe(1234);
    expect(origins.syncFrequency).toBe("flag");
    expect(origins.fileCheckFrequency).toBe("file");
  });

  test("accepts lists as commas and as repetition", () => {
    expect(resolveConfig({ etcdServers: ["http://a:2379,http://b:2379", "http://c:2379"] }).config.etcdServers).toEqual(
      ["http://a:2379", "http://b:2379", "http://c:2379"],
    );
  });

  test("takes fleet mode's lease and frequencies from KubeletConfiguration, and refuses a lease that expires between renewals", () => {
    const dir = mkdtempSync(join(tmpdir(), "kubelet-config-fleet-"));
    const path = join(dir, "kubelet.yaml");
    writeFileSync(
      path,
      "kind: KubeletConfiguration\nnodeLeaseDurationSeconds: 20\nnodeStatusUpdateFrequency: 5s\nregisterNode: false\n",
    );
    expect(resolveConfig({}, path).config).toMatchObject({
      nodeLeaseDuration: 20_000,
      nodeStatusUpdateFrequency: 5000,
      registerNode: false,
    });
    expect(() => resolveConfig({ nodeLeaseDuration: "10s", nodeStatusUpdateFrequency: "10s" })).toThrow(
      /--node_status_update_frequency "10s" must be above 0 and below --node_lease_duration \(10s\)/,
    );
    expect(() => resolveConfig({ nodeLeaseDuration: "1500ms" })).toThrow(
      /--node_lease_duration "1.5s": etcd leases are whole seconds/,
    );
  });

  test("takes --http_idle_timeout in whole seconds up to the 255s Bun.serve allows, 0 meaning never", () => {
    expect(resolveConfig({}).config.httpIdleTimeout).toBe(90_000);
    expect(resolveConfig({ httpIdleTimeout: "0" }).config.httpIdleTimeout).toBe(0);
    expect(resolveConfig({ httpIdleTimeout: "4m15s" }).config.httpIdleTimeout).toBe(255_000);
    expect(() => resolveConfig({ httpIdleTimeout: "5m" })).toThrow(
      /--http_idle_timeout "5m": must be whole seconds, at most 255s \(0 = never close\)/,
    );
    expect(() => resolveConfig({ httpIdleTimeout: "1500ms" })).toThrow(
      /--http_idle_timeout "1.5s": must be whole seconds/,
    );
  });

  test("refuses --etcd_servers together with --etcd_config", () => {
    expect(() => resolveConfig({ etcdServers: "http://a:2379", etcdConfig: "/etc/etcd.json" })).toThrow(
      /mutually exclusive/,
    );
  });

  test("names the flag and the problem for a bad value", () => {
    expect(() => resolveConfig({ port: "70000" })).toThrow(/--port: a port is at most 65535/);
    expect(() => resolveConfig({ enableServer: "maybe" })).toThrow(/--enable_server: expected true or false/);
    expect(() => resolveConfig({ syncFrequency: "10" })).toThrow(/--sync_frequency/);
  });

  test("reports every problem of the config file and the flags at once, one line each", () => {
    const dir = mkdtempSync(join(tmpdir(), "kubelet-config-errors-"));
    try {
      const path = join(dir, "kubelet.yaml");
      writeFileSync(
        path,
        "kind: KubeletConfiguration\napiVersion: kubelet.config.k8s.io/v1beta1\nstaticPodPth: /etc/kubelet\nsyncFrequency: 10\nmaxPods: 20\n",
      );
      let thrown: unknown;
      try {
        resolveConfig({ port: "70000", imageGcLowThreshold: "90", etcdConfig: join(dir, "etcd.yaml") }, path);
      } catch (error) {
        thrown = error;
      }
      expect(thrown).toBeInstanceOf(ConfigError);
      const error = thrown as ConfigError;
      expect(error.code).toBe("InvalidConfig");
      expect(error.problems).toEqual([
        `--config_file "${path}": unknown field "staticPodPth" (did you mean staticPodPath?): settings are KubeletConfiguration fields (kubelet.config.k8s.io/v1beta1) or flag names such as sync_frequency`,
        `--config_file "${path}": syncFrequency: expected a duration string such as "1m30s", got 10`,
        'invalid value "70000" for --port: a port is at most 65535',
        "--image_gc_low_threshold (90) must not be above --image_gc_high_threshold (85)",
        expect.stringContaining(`--etcd_config "${join(dir, "etcd.yaml")}": ENOENT`),
      ]);
      expect(error.message).toBe(error.problems.join("\n"));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("refuses pull settings that cannot work: a zero progress deadline, parallel pulls while serialized", () => {
    expect(() => resolveConfig({ imagePullProgressDeadline: "0s" })).toThrow(
      /--image_pull_progress_deadline: must be positive, got 0s/,
    );
    expect(() => resolveConfig({ maxParallelImagePulls: "3" })).toThrow(
      /--max_parallel_image_pulls needs --serialize_image_pulls=false/,
    );
    expect(
      resolveConfig({ maxParallelImagePulls: "3", serializeImagePulls: "false" }).config.maxParallelImagePulls,
    ).toBe(3);
  });

  test("reads shutdownGracePeriodByPodPriority from the file's list and from priority=seconds pairs", () => {
    withConfigFile(
      "shutdownGracePeriodByPodPriority:\n- {priority: 100000, shutdownGracePeriodSeconds: 10}\n- {priority: 0, shutdownGracePeriodSeconds: 60}\n",
      (path) => {
        const { config, origins } = resolveConfig({}, path);
        expect(config.shutdownGracePeriodByPodPriority).toEqual([
          { priority: 100_000, shutdownGracePeriodSeconds: 10 },
          { priority: 0, shutdownGracePeriodSeconds: 60 },
        ]);
        expect(origins.shutdownGracePeriodByPodPriority).toBe("file");
      },
    );
    expect(
      resolveConfig({ shutdownGracePeriodByPodPriority: "0=60,-5=3s" }).config.shutdownGracePeriodByPodPriority,
    ).toEqual([
      { priority: 0, shutdownGracePeriodSeconds: 60 },
      { priority: -5, shutdownGracePeriodSeconds: 3 },
    ]);
    withConfigFile("shutdownGracePeriodByPodPriority:\n- {priority: 1, shutdownGracePeriodSeconds: -1}\n", (path) =>
      expect(() => resolveConfig({}, path)).toThrow(
        `--config_file "${path}": invalid value [{"priority":1,"shutdownGracePeriodSeconds":-1}] for shutdownGracePeriodByPodPriority: [0].shutdownGracePeriodSeconds: expected a non-negative integer, got -1`,
      ),
    );
  });

  test("refuses shutdownGracePeriodByPodPriority with shutdownGracePeriod in the Go kubelet's words", () => {
    expect(() =>
      resolveConfig({
        shutdownGracePeriodByPodPriority: "0=10",
        shutdownGracePeriodCriticalPods: "5s",
        shutdownGracePeriod: "10s",
      }),
    ).toThrow(
      "invalid configuration: Cannot specify both shutdownGracePeriodByPodPriority and shutdownGracePeriod at the same time",
    );
    expect(() => resolveConfig({ shutdownGracePeriod: "10s", shutdownGracePeriodCriticalPods: "20s" })).toThrow(
      "--shutdown_grace_period_critical_pods (shutdownGracePeriodCriticalPods, 20s) must be <= --shutdown_grace_period (shutdownGracePeriod, 10s)",
    );
    expect(() => resolveConfig({ shutdownGracePeriodByPodPriority: "high=10" })).toThrow(
      'invalid value "high=10" for --shutdown_grace_period_by_pod_priority: expected "priority=seconds" pairs such as 0=60,10000=30, got "high=10"',
    );
  });

  test("print-config marks every value with where it came from", () => {
    const text = printConfig(resolveConfig({ port: "1234" }, file), { format: "yaml", showOrigin: true });
    expect(text).toContain("port: 1234  # flag");
    expect(text).toContain("sync_frequency: 30s  # file");
    expect(text).toContain("root_dir: /var/lib/kubelet  # default");
  });
});

describe("the commented config file (print-config --commented, written by install.sh)", () => {
  const readBack = (text: string) => {
    const dir = mkdtempSync(join(tmpdir(), "kubelet-config-"));
    try {
      writeFileSync(join(dir, "config.yaml"), text);
      return resolveConfig({}, join(dir, "config.yaml"));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  };

  test("sets only the values given and leaves every other key commented at its default", () => {
    const text = commentedConfigFile(resolveConfig({ config: "/etc/kubelet/manifests" }));
    const active = text.split("\n").filter((line) => line && !line.startsWith("#"));
    expect(active).toEqual(["config: /etc/kubelet/manifests"]);
    for (const spec of FLAGS.filter((f) => f.key !== "config")) expect(text).toContain(`\n# ${spec.flag}: `);
    expect(readBack(text).origins.syncFrequency).toBe("default");
    expect(readBack(text).config.config).toBe("/etc/kubelet/manifests");
  });

  test("reads back as exactly the defaults once every line is uncommented", () => {
    const text = commentedConfigFile(resolveConfig({}));
    const uncommented = text.replace(/^# ([a-z_]+: )/gm, "$1");
    const { config, origins } = readBack(uncommented);
    expect(config).toEqual({ ...resolveConfig({}).config, configFile: config.configFile });
    for (const spec of FLAGS) expect(origins[spec.key]).toBe("file");
  });

  test("names each key's flag and KubeletConfiguration alias", () => {
    expect(commentedConfigFile(resolveConfig({}))).toContain('[--config, -c, staticPodPath]\n# config: ""');
  });
});
