// `kubelet describe pod|node NAME`: kubectl's describe output for a pod (containers, states, conditions, volumes,
// QoS, events) and for this node (conditions, addresses, capacity, system info, its pods' requests, events), read
// from this node's API as kubectl reads it (the object, then the events its field selectors pick).
import { podQosClass, podTotals } from "../api/qos.ts";
import { milliCpu, parseQuantity } from "../api/quantity.ts";
import { KubeletError, type Pod, type V1Node } from "../api/types.ts";
import type { ApiClient } from "./api-client.ts";
import { memoryQuantity } from "../server/apiserver/metrics-api.ts";
import { age } from "../server/apiserver/table-print.ts";
import { tabwrite } from "./tabwriter.ts";

interface EventItem {
  type: string;
  reason: string;
  message: string;
  count?: number;
  firstTimestamp?: string;
  lastTimestamp?: string;
  source?: { component?: string };
  reportingComponent?: string;
}

/** Go's time.RFC1123Z in UTC: `Mon, 02 Jan 2006 15:04:05 +0000`; an unset time is Go's zero time, as kubectl prints it. */
function rfc1123z(time: string | undefined): string {
  if (!time) return "Mon, 01 Jan 0001 00:00:00 +0000";
  return new Date(time).toUTCString().replace("GMT", "+0000");
}

/** describe's PrefixWriter over a tabwriter (minwidth 0, padding 2); `flush` ends a block of aligned lines. */
function createWriter() {
  const blocks: string[] = [];
  let text = "";
  return {
    line(level: number, line: string) {
      text += `${"  ".repeat(level)}${line}\n`;
    },
    flush() {
      blocks.push(tabwrite(text, 0, 2));
      text = "";
    },
    done(): string {
      blocks.push(tabwrite(text, 0, 2));
      return blocks.join("");
    },
  };
}

type Writer = ReturnType<typeof createWriter>;

/** printLabelsMultiline: sorted `key=value`, one a line, or <none>. */
function labels(w: Writer, title: string, map: Record<string, string> | undefined) {
  const keys = Object.keys(map ?? {}).sort();
  if (!keys.length) return w.line(0, `${title}:\t<none>`);
  keys.forEach((key, i) => w.line(0, `${i ? "" : `${title}:`}\t${key}=${map![key]}`));
}

/** printAnnotationsMultiline: sorted `key: value`, kubectl's last-applied-configuration left out. */
function annotations(w: Writer, map: Record<string, string> | undefined) {
  const keys = Object.keys(map ?? {})
    .filter((k) => k !== "kubectl.kubernetes.io/last-applied-configuration")
    .sort();
  if (!keys.length) return w.line(0, "Annotations:\t<none>");
  keys.forEach((key, i) => w.line(0, `${i ? "" : "Annotations:"}\t${key}: ${map![key]!.replace(/\n$/, "")}`));
}

/** DescribeEvents: oldest last seen first, `Type Reason Age From Message`. */
function events(w: Writer, list: EventItem[], now: number) {
  if (!list.length) return w.line(0, "Events:\t<none>");
  w.flush();
  w.line(0, "Events:");
  w.line(1, "Type\tReason\tAge\tFrom\tMessage");
  w.line(1, "----\t------\t----\t----\t-------");
  const sorted = [...list].sort((a, b) => Date.parse(a.lastTimestamp ?? "") - Date.parse(b.lastTimestamp ?? ""));
  for (const e of sorted) {
    const first = age(e.firstTimestamp, now);
    const seen = (e.count ?? 1) > 1 ? `${age(e.lastTimestamp, now)} (x${e.count} over ${first})` : first;
    w.line(
      1,
      `${e.type}\t${e.reason}\t${seen}\t${e.source?.component || e.reportingComponent || ""}\t${e.message.trim()}`,
    );
  }
}

type ContainerStatus = NonNullable<NonNullable<Pod["status"]>["containerStatuses"]>[number];
type ContainerState = ContainerStatus["state"];

function state(w: Writer, title: string, s: ContainerState) {
  if (s?.running) {
    w.line(2, `${title}:\tRunning`);
    w.line(3, `Started:\t${rfc1123z(s.running.startedAt as unknown as string)}`);
  } else if (s?.terminated) {
    const t = s.terminated;
    w.line(2, `${title}:\tTerminated`);
    if (t.reason) w.line(3, `Reason:\t${t.reason}`);
    if (t.message) w.line(3, `Message:\t${t.message}`);
    w.line(3, `Exit Code:\t${t.exitCode}`);
    if (t.signal) w.line(3, `Signal:\t${t.signal}`);
    w.line(3, `Started:\t${rfc1123z(t.startedAt as unknown as string)}`);
    w.line(3, `Finished:\t${rfc1123z(t.finishedAt as unknown as string)}`);
  } else {
    w.line(2, `${title}:\tWaiting`);
    if (s?.waiting?.reason) w.line(3, `Reason:\t${s.waiting.reason}`);
  }
}

function containers(w: Writer, title: string, list: Pod["spec"]["containers"], statuses: ContainerStatus[] = []) {
  w.line(0, `${title}:`);
  for (const c of list) {
    const status = statuses.find((s) => s.name === c.name);
    w.line(1, `${c.name}:`);
    if (status) w.line(2, `Container ID:\t${status.containerID ?? ""}`);
    w.line(2, `Image:\t${c.image ?? ""}`);
    if (status) w.line(2, `Image ID:\t${status.imageID ?? ""}`);
    const ports = (c.ports ?? []).map((p) => `${p.containerPort}/${p.protocol ?? "TCP"}`).join(", ");
    w.line(2, `${ports.includes(",") ? "Ports" : "Port"}:\t${ports || "<none>"}`);
    const hostPorts = (c.ports ?? []).map((p) => `${p.hostPort ?? 0}/${p.protocol ?? "TCP"}`).join(", ");
    w.line(2, `${hostPorts.includes(",") ? "Host Ports" : "Host Port"}:\t${hostPorts || "<none>"}`);
    for (const [name, values] of [
      ["Command", c.command],
      ["Args", c.args],
    ] as const) {
      if (!values?.length) continue;
      w.line(2, `${name}:`);
      for (const value of values) for (const part of value.split("\n")) w.line(3, part);
    }
    if (status) {
      state(w, "State", status.state);
      if (status.lastState?.terminated) state(w, "Last State", status.lastState);
      w.line(2, `Ready:\t${status.ready ? "True" : "False"}`);
      w.line(2, `Restart Count:\t${status.restartCount}`);
    }
    for (const [name, values] of [
      ["Limits", c.resources?.limits],
      ["Requests", c.resources?.requests],
    ] as const) {
      const keys = Object.keys(values ?? {}).sort();
      if (!keys.length) continue;
      w.line(2, `${name}:`);
      for (const key of keys) w.line(3, `${key}:\t${String((values as Record<string, unknown>)[key])}`);
    }
    const env = c.env ?? [];
    w.line(2, `Environment:${env.length ? "" : "\t<none>"}`);
    for (const e of env) {
      if (e.valueFrom?.secretKeyRef)
        w.line(
          3,
          `${e.name}:\t<set to the key '${e.valueFrom.secretKeyRef.key}' in secret '${e.valueFrom.secretKeyRef.name}'>\tOptional: ${e.valueFrom.secretKeyRef.optional ?? false}`,
        );
      else if (e.valueFrom?.configMapKeyRef)
        w.line(
          3,
          `${e.name}:\t<set to the key '${e.valueFrom.configMapKeyRef.key}' of config map '${e.valueFrom.configMapKeyRef.name}'>\tOptional: ${e.valueFrom.configMapKeyRef.optional ?? false}`,
        );
      else if (e.valueFrom?.fieldRef)
        w.line(3, `${e.name}:\t (${e.valueFrom.fieldRef.apiVersion ?? "v1"}:${e.valueFrom.fieldRef.fieldPath})`);
      else w.line(3, `${e.name}:\t${e.value ?? ""}`);
    }
    const mounts = [...(c.volumeMounts ?? [])].sort((a, b) => a.mountPath.localeCompare(b.mountPath));
    w.line(2, `Mounts:${mounts.length ? "" : "\t<none>"}`);
    for (const m of mounts)
      w.line(
        3,
        `${m.mountPath} from ${m.name} (${[m.readOnly ? "ro" : "rw", ...(m.subPath ? [`path="${m.subPath}"`] : [])].join(",")})`,
      );
  }
}

function volumes(w: Writer, list: Pod["spec"]["volumes"]) {
  if (!list?.length) return w.line(0, "Volumes:\t<none>");
  w.line(0, "Volumes:");
  for (const v of list) {
    w.line(1, `${v.name}:`);
    if (v.hostPath) {
      w.line(2, "Type:\tHostPath (bare host directory volume)");
      w.line(2, `Path:\t${v.hostPath.path}`);
      w.line(2, `HostPathType:\t${v.hostPath.type || "<none>"}`);
    } else if (v.emptyDir) {
      w.line(2, "Type:\tEmptyDir (a temporary directory that shares a pod's lifetime)");
      w.line(2, `Medium:\t${v.emptyDir.medium ?? ""}`);
      w.line(2, `SizeLimit:\t${v.emptyDir.sizeLimit ?? "<unset>"}`);
    } else if (v.configMap) {
      w.line(2, "Type:\tConfigMap (a volume populated by a ConfigMap)");
      w.line(2, `Name:\t${v.configMap.name}`);
      w.line(2, `Optional:\t${v.configMap.optional ?? false}`);
    } else if (v.secret) {
      w.line(2, "Type:\tSecret (a volume populated by a Secret)");
      w.line(2, `SecretName:\t${v.secret.secretName}`);
      w.line(2, `Optional:\t${v.secret.optional ?? false}`);
    } else if (v.downwardAPI) w.line(2, "Type:\tDownwardAPI (a volume populated by information about the pod)");
    else w.line(2, "<unknown>");
  }
}

/** The events kubectl's describe shows for an object: its field selectors on involvedObject. */
async function eventsOf(client: ApiClient, namespace: string, ref: { kind: string; name: string; uid: string }) {
  const selector = [
    `involvedObject.name=${ref.name}`,
    `involvedObject.namespace=${namespace}`,
    `involvedObject.kind=${ref.kind}`,
    `involvedObject.uid=${ref.uid}`,
  ].join(",");
  const scope = namespace ? `/namespaces/${namespace}` : "";
  const list = await client.get<{ items: EventItem[] }>(
    `/api/v1${scope}/events?fieldSelector=${encodeURIComponent(selector)}`,
  );
  return list.items;
}

/** `kubelet describe pod NAME`. */
export async function describePod(
  client: ApiClient,
  namespace: string,
  name: string,
  now = Date.now(),
): Promise<string> {
  const pod = await client.get<Pod>(
    `/api/v1/namespaces/${encodeURIComponent(namespace)}/pods/${encodeURIComponent(name)}`,
  );
  const list = await eventsOf(client, namespace, { kind: "Pod", name, uid: pod.metadata.uid });
  const w = createWriter();
  const status = pod.status ?? {};
  w.line(0, `Name:\t${pod.metadata.name}`);
  w.line(0, `Namespace:\t${pod.metadata.namespace}`);
  if (pod.spec.priority !== undefined) w.line(0, `Priority:\t${pod.spec.priority}`);
  if (pod.spec.priorityClassName) w.line(0, `Priority Class Name:\t${pod.spec.priorityClassName}`);
  if (pod.spec.runtimeClassName) w.line(0, `Runtime Class Name:\t${pod.spec.runtimeClassName}`);
  if (pod.spec.serviceAccountName) w.line(0, `Service Account:\t${pod.spec.serviceAccountName}`);
  w.line(0, `Node:\t${pod.spec.nodeName ? `${pod.spec.nodeName}/${status.hostIP ?? ""}` : "<none>"}`);
  if (status.startTime) w.line(0, `Start Time:\t${rfc1123z(status.startTime as unknown as string)}`);
  labels(w, "Labels", pod.metadata.labels);
  annotations(w, pod.metadata.annotations);
  w.line(0, `Status:\t${status.phase ?? ""}`);
  if (status.reason) w.line(0, `Reason:\t${status.reason}`);
  if (status.message) w.line(0, `Message:\t${status.message}`);
  w.line(0, `IP:\t${status.podIP ?? ""}`);
  if (!status.podIPs?.length) w.line(0, "IPs:\t<none>");
  else {
    w.line(0, "IPs:");
    for (const ip of status.podIPs) w.line(1, `IP:\t${ip.ip}`);
  }
  if (pod.spec.initContainers?.length)
    containers(w, "Init Containers", pod.spec.initContainers, status.initContainerStatuses);
  containers(w, "Containers", pod.spec.containers, status.containerStatuses);
  if (status.conditions?.length) {
    w.line(0, "Conditions:");
    w.line(1, "Type\tStatus");
    for (const c of status.conditions) w.line(1, `${c.type} \t${c.status} `);
  }
  volumes(w, pod.spec.volumes);
  w.line(0, `QoS Class:\t${podQosClass(pod)}`);
  labels(w, "Node-Selectors", pod.spec.nodeSelector);
  const tolerations = pod.spec.tolerations ?? [];
  if (!tolerations.length) w.line(0, "Tolerations:\t<none>");
  else
    tolerations.forEach((t, i) =>
      w.line(
        0,
        `${i ? "" : "Tolerations:"}\t${t.key ?? ""}${t.operator === "Exists" ? "" : `=${t.value ?? ""}`}${t.effect ? `:${t.effect}` : ""}${t.operator === "Exists" && !t.key ? " op=Exists" : ""}${t.tolerationSeconds !== undefined ? ` for ${t.tolerationSeconds}s` : ""}`,
      ),
    );
  events(w, list, now);
  return w.done();
}

/** A resource amount as kubectl prints it with its share of allocatable: `250m (12%)`. */
function share(value: number, of: number, text: string): string {
  return `${text} (${of > 0 ? Math.floor((value / of) * 100) : 0}%)`;
}

/** `kubelet describe node NAME`. */
export async function describeNode(client: ApiClient, name: string, now = Date.now()): Promise<string> {
  const node = await client.get<V1Node>(`/api/v1/nodes/${encodeURIComponent(name)}`);
  const selector = `spec.nodeName=${name},status.phase!=Failed,status.phase!=Succeeded`;
  const pods = await client
    .get<{ items: Pod[] }>(`/api/v1/pods?fieldSelector=${encodeURIComponent(selector)}`)
    .then((l) => l.items)
    .catch((error: Error) => {
      if (/\(Forbidden\)/.test(error.message)) return undefined;
      throw error;
    });
  const list = await eventsOf(client, "", { kind: "Node", name, uid: node.metadata?.uid ?? name });
  // kubectl shows the node's Lease, or why it could not get it (a standalone node holds none).
  const lease = await client
    .get<{ spec?: { holderIdentity?: string; acquireTime?: string; renewTime?: string } }>(
      `/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/${encodeURIComponent(name)}`,
    )
    .catch((error: Error & { statusMessage?: string }) => error.statusMessage ?? error.message);
  const w = createWriter();
  const status = node.status ?? {};
  const roles = Object.keys(node.metadata?.labels ?? {})
    .filter((k) => k.startsWith("node-role.kubernetes.io/"))
    .map((k) => k.slice("node-role.kubernetes.io/".length))
    .filter(Boolean)
    .sort();
  w.line(0, `Name:\t${node.metadata?.name}`);
  w.line(0, `Roles:\t${roles.join(",") || "<none>"}`);
  labels(w, "Labels", node.metadata?.labels);
  annotations(w, node.metadata?.annotations);
  w.line(0, `CreationTimestamp:\t${rfc1123z(node.metadata?.creationTimestamp as unknown as string)}`);
  const taints = node.spec?.taints ?? [];
  if (!taints.length) w.line(0, "Taints:\t<none>");
  else
    taints.forEach((t, i) => w.line(0, `${i ? "" : "Taints:"}\t${t.key}${t.value ? `=${t.value}` : ""}:${t.effect}`));
  w.line(0, `Unschedulable:\t${node.spec?.unschedulable ?? false}`);
  if (lease === undefined || typeof lease === "string") w.line(0, `Lease:\tFailed to get lease: ${lease ?? ""}`);
  else {
    w.line(0, "Lease:");
    w.line(1, `HolderIdentity:\t${lease.spec?.holderIdentity ?? "<unset>"}`);
    w.line(1, `AcquireTime:\t${lease.spec?.acquireTime ? rfc1123z(lease.spec.acquireTime) : "<unset>"}`);
    w.line(1, `RenewTime:\t${lease.spec?.renewTime ? rfc1123z(lease.spec.renewTime) : "<unset>"}`);
  }
  if (status.conditions?.length) {
    w.line(0, "Conditions:");
    w.line(1, "Type\tStatus\tLastHeartbeatTime\tLastTransitionTime\tReason\tMessage");
    w.line(1, "----\t------\t-----------------\t------------------\t------\t-------");
    for (const c of status.conditions)
      w.line(
        1,
        `${c.type} \t${c.status} \t${rfc1123z(c.lastHeartbeatTime as unknown as string)} \t${rfc1123z(c.lastTransitionTime as unknown as string)} \t${c.reason ?? ""} \t${c.message ?? ""}`,
      );
  }
  w.line(0, "Addresses:");
  for (const a of status.addresses ?? []) w.line(1, `${a.type}:\t${a.address}`);
  for (const [title, resources] of [
    ["Capacity", status.capacity],
    ["Allocatable", status.allocatable],
  ] as const) {
    const keys = Object.keys(resources ?? {}).sort();
    if (!keys.length) continue;
    w.line(0, `${title}:`);
    for (const key of keys) w.line(1, `${key}:\t${String((resources as Record<string, unknown>)[key])}`);
  }
  const info = status.nodeInfo;
  w.line(0, "System Info:");
  for (const [label, value] of [
    ["Machine ID", info?.machineID],
    ["System UUID", info?.systemUUID],
    ["Boot ID", info?.bootID],
    ["Kernel Version", info?.kernelVersion],
    ["OS Image", info?.osImage],
    ["Operating System", info?.operatingSystem],
    ["Architecture", info?.architecture],
    ["Container Runtime Version", info?.containerRuntimeVersion],
    ["Kubelet Version", info?.kubeletVersion],
    ["Kube-Proxy Version", info?.kubeProxyVersion],
  ])
    w.line(1, `${label}:\t${value ?? ""}`);
  if (!pods) w.line(0, "Pods:\tnot authorized");
  else {
    const allocatable = (status.allocatable ?? status.capacity ?? {}) as Record<string, string>;
    const cpu = milliCpu(allocatable.cpu ?? "0") ?? 0;
    const memory = parseQuantity(allocatable.memory ?? "0") ?? 0;
    const milli = (m: number) => (m % 1000 === 0 ? String(m / 1000) : `${m}m`);
    w.line(0, `Non-terminated Pods:\t(${pods.length} in total)`);
    w.line(1, "Namespace\tName\t\tCPU Requests\tCPU Limits\tMemory Requests\tMemory Limits\tAge");
    w.line(1, "---------\t----\t\t------------\t----------\t---------------\t-------------\t---");
    const sum = { cpuReq: 0, cpuLim: 0, memReq: 0, memLim: 0 };
    for (const pod of pods) {
      const { requests, limits } = podTotals(pod);
      sum.cpuReq += requests.cpu;
      sum.cpuLim += limits.cpu ?? 0;
      sum.memReq += requests.memory;
      sum.memLim += limits.memory ?? 0;
      w.line(
        1,
        `${pod.metadata.namespace}\t${pod.metadata.name}\t\t${share(requests.cpu, cpu, milli(requests.cpu))}\t${share(limits.cpu ?? 0, cpu, milli(limits.cpu ?? 0))}\t${share(requests.memory, memory, memoryQuantity(requests.memory))}\t${share(limits.memory ?? 0, memory, memoryQuantity(limits.memory ?? 0))}\t${age(pod.metadata.creationTimestamp as unknown as string, now)}`,
      );
    }
    w.line(0, "Allocated resources:");
    w.line(1, "(Total limits may be over 100 percent, i.e., overcommitted.)");
    w.line(1, "Resource\tRequests\tLimits");
    w.line(1, "--------\t--------\t------");
    w.line(1, `cpu\t${share(sum.cpuReq, cpu, milli(sum.cpuReq))}\t${share(sum.cpuLim, cpu, milli(sum.cpuLim))}`);
    w.line(
      1,
      `memory\t${share(sum.memReq, memory, memoryQuantity(sum.memReq))}\t${share(sum.memLim, memory, memoryQuantity(sum.memLim))}`,
    );
    const storage = parseQuantity(allocatable["ephemeral-storage"] ?? "0") ?? 0;
    const [storageReq, storageLim] = (["requests", "limits"] as const).map((field) =>
      pods
        .flatMap((pod) => pod.spec.containers)
        .reduce((n, c) => n + (parseQuantity(String(c.resources?.[field]?.["ephemeral-storage"] ?? 0)) ?? 0), 0),
    ) as [number, number];
    w.line(
      1,
      `ephemeral-storage\t${share(storageReq, storage, memoryQuantity(storageReq))}\t${share(storageLim, storage, memoryQuantity(storageLim))}`,
    );
  }
  events(w, list, now);
  return w.done();
}

/** The describers `kubelet describe` has. */
export function describeKind(name: string): "pod" | "node" {
  const lower = name.toLowerCase();
  if (["pod", "pods", "po"].includes(lower)) return "pod";
  if (["node", "nodes", "no"].includes(lower)) return "node";
  throw new KubeletError(
    "UnknownResource",
    `kubelet describe reads pods and nodes, not "${name}": use kubelet describe pod NAME or kubelet describe node NAME`,
  );
}
