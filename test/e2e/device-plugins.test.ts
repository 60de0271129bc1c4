// Device plugins and the pod resources API, end to end on Docker and containerd: the test plugin process
// (lib/testing/test-device-plugin.ts, written against deviceplugin v1beta1) registers on the compiled kubelet's
// device-plugins/kubelet.sock, its widgets become the node record's extended resource, a pod gets a widget's env,
// mount and device node, a pod asking too many is rejected in upstream's words, the pod resources API lists the
// pod's device from a grpc-js client, a restarted kubelet keeps the allocation, and the plugin killed leaves its
// widgets unhealthy.
import { afterAll, beforeAll, expect } from "bun:test";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { V1Node } from "../../lib/api/types.ts";
import { fleetKeys } from "../../lib/node/status/fleet-reporter.ts";
import { createEtcdClient, type EtcdClient } from "../../lib/sources/etcd-client.ts";
import { podResourcesClient } from "../../lib/testing/podresources-client.ts";
import { type Kubelet, startKubelet, test } from "./harness-kubelet.ts";
import { describeOnRuntimes, writePod } from "./harness-runtimes.ts";
import { removeDir, tempDir } from "./harness.ts";

const WIDGET = "example.com/widget";
const PLUGIN = join(import.meta.dir, "../../lib/testing/test-device-plugin.ts");

describeOnRuntimes("device plugins", (services, rt) => {
  const manifests = tempDir("dp-manifests");
  const rootDir = tempDir("dp-root");
  const hostFile = join(tempDir("dp-host"), "widget.txt");
  const node = `e2e-dp-${rt.label}`;
  const pods = ["e2e-widget", "e2e-widget-greedy"];
  let kubelet: Kubelet;
  let plugin: ReturnType<typeof Bun.spawn> | undefined;
  let etcd: EtcdClient;

  const start = () =>
    startKubelet([
      ...rt.runFlags(manifests, rootDir),
      "--etcd_servers",
      services.etcd,
      "--hostname_override",
      node,
      "--node_status_update_frequency",
      "1s",
      "--sync_frequency",
      "2s",
    ]);
  const nodeRecord = async () => {
    const { entry } = await etcd.get(fleetKeys.node(node));
    return entry ? (JSON.parse(entry.value) as V1Node) : undefined;
  };
  const widgets = async () => {
    const status = (await nodeRecord())?.status;
    return { capacity: status?.capacity?.[WIDGET], allocatable: status?.allocatable?.[WIDGET] };
  };
  /** The lease the node record was last written under: a restarted kubelet writes under a new one. */
  const lease = async () => (await etcd.get(fleetKeys.node(node))).entry?.lease;
  const podResources = () => podResourcesClient(join(rootDir, "pod-resources", "kubelet.sock"));
  const widgetSpec = (count: number) => ({
    terminationGracePeriodSeconds: 1,
    containers: [
      {
        name: "app",
        image: services.busybox,
        command: ["sh", "-c", "echo ids=$WIDGET_IDS; cat /run/widget; ls /dev/ | grep widget; sleep 3600"],
        resources: { limits: { [WIDGET]: String(count) } },
      },
    ],
  });

  beforeAll(async () => {
    writeFileSync(hostFile, "a widget's host file\n");
    etcd = createEtcdClient({ endpoints: [services.etcd] });
    kubelet = await start();
    plugin = Bun.spawn(
      [
        process.execPath,
        PLUGIN,
        "--dir",
        join(rootDir, "device-plugins"),
        "--resource",
        WIDGET,
        "--count",
        "2",
        "--file",
        hostFile,
      ],
      { stdout: "pipe", stderr: "inherit" },
    );
  });
  afterAll(async () => {
    plugin?.kill("SIGKILL");
    await kubelet?.stop("SIGKILL");
    await rt.removePods(...pods);
    await etcd?.delete(fleetKeys.node(node)).catch(() => {});
    etcd?.close();
    removeDir(manifests);
    removeDir(rootDir);
  });

  test("the plugin registers on kubelet.sock and its two widgets are the node record's capacity and allocatable", async () => {
    await kubelet.waitFor("the widgets in the node record", async () => (await widgets()).allocatable === "2", 60_000);
    expect(await widgets()).toEqual({ capacity: "2", allocatable: "2" });
  });

  let heldId = "";
  test("a pod asking for a widget runs with the plugin's env var, its host file mounted and the device node", async () => {
    writePod(manifests, "e2e-widget", widgetSpec(1));
    await kubelet.waitFor("e2e-widget running", () => rt.running("e2e-widget", "app"), 90_000);
    const logs = await kubelet.waitFor(
      "e2e-widget's output",
      async () => {
        const text = await (await kubelet.admin("/containerLogs/default/e2e-widget/app")).text();
        return text.includes("widget-") && text.includes("host file") ? text : undefined;
      },
      30_000,
    );
    heldId = /ids=(widget-\d)/.exec(logs)![1]!;
    expect(logs).toContain("a widget's host file");
    expect(logs).toContain(`\n${heldId}\n`);
  });

  test("a pod asking for more widgets than are free is rejected with upstream's UnexpectedAdmissionError", async () => {
    writePod(manifests, "e2e-widget-greedy", widgetSpec(2));
    const pod = await kubelet.waitForPod("e2e-widget-greedy", "rejected", (p) => p.status?.phase === "Failed", 30_000);
    const status = pod.status as { reason?: string; message?: string };
    expect(status.reason).toBe("UnexpectedAdmissionError");
    expect(status.message).toBe(
      "Pod was rejected: Allocate failed due to requested number of devices unavailable for example.com/widget. Requested: 2, Available: 1, which is unexpected",
    );
  });

  test("the pod resources API lists the pod's widget to a grpc client, and both widgets as allocatable", async () => {
    const client = await podResources();
    try {
      const list = await client.list();
      const pod = list.pod_resources.find((p: { name: string }) => p.name === "e2e-widget");
      expect(pod.containers).toEqual([
        expect.objectContaining({
          name: "app",
          devices: [{ resource_name: WIDGET, device_ids: [heldId], topology: null }],
        }),
      ]);
      expect((await client.get("e2e-widget", "default")).pod_resources.containers[0].devices[0].device_ids).toEqual([
        heldId,
      ]);
      const allocatable = await client.getAllocatableResources();
      expect(allocatable.devices.map((d: { device_ids: string[] }) => d.device_ids[0]).sort()).toEqual([
        "widget-0",
        "widget-1",
      ]);
    } finally {
      client.close();
    }
  });

  test("a restarted kubelet keeps the allocation from kubelet_internal_checkpoint and leaves the container running", async () => {
    rmSync(join(manifests, "e2e-widget-greedy.yaml"));
    const before = (await rt.running("e2e-widget", "app"))!;
    const oldLease = await lease();
    await kubelet.stop("SIGTERM");
    const saved = JSON.parse(readFileSync(join(rootDir, "device-plugins", "kubelet_internal_checkpoint"), "utf8"));
    expect(saved.Data.PodDeviceEntries).toEqual([
      expect.objectContaining({ ContainerName: "app", ResourceName: WIDGET, DeviceIDs: { "-1": [heldId] } }),
    ]);
    kubelet = await start();
    // The record the stopped kubelet wrote last says 2 too: wait for the new kubelet's own.
    await kubelet.waitFor(
      "the plugin registered again",
      async () => (await lease()) !== oldLease && (await widgets()).allocatable === "2",
      60_000,
    );
    const client = await podResources();
    try {
      const pod = (await client.get("e2e-widget", "default")).pod_resources;
      expect(pod.containers[0].devices[0].device_ids).toEqual([heldId]);
    } finally {
      client.close();
    }
    expect((await rt.running("e2e-widget", "app"))?.id).toBe(before.id);
  });

  test("the plugin killed leaves its widgets in capacity but not in allocatable", async () => {
    plugin!.kill("SIGKILL");
    await plugin!.exited;
    await kubelet.waitFor("the widgets unhealthy", async () => (await widgets()).allocatable === "0", 30_000);
    expect(await widgets()).toEqual({ capacity: "2", allocatable: "0" });
  });
});
