// The records a hollow fleet node writes (its node object, each placed pod's manifest and its reported status), of
// the size real nodes write: shared by the fleet serve benches so they measure the same shapes.

const now = new Date().toISOString().replace(/\.\d+Z$/, "Z");
export const node = (name: string) => ({
  metadata: { name, labels: { "kubernetes.io/hostname": name, "kubernetes.io/os": "linux" } },
  spec: {},
  status: {
    capacity: { cpu: "2", memory: "24Gi", pods: "110" },
    allocatable: { cpu: "2", memory: "23Gi", pods: "110" },
    conditions: [{ type: "Ready", status: "True", reason: "KubeletReady", message: "kubelet is posting ready status" }],
    addresses: [
      { type: "InternalIP", address: "127.0.0.1" },
      { type: "Hostname", address: name },
    ],
    daemonEndpoints: { kubeletEndpoint: { Port: 10250 } },
    nodeInfo: { kubeletVersion: "v1.32.0+kubelet", containerRuntimeVersion: "fake://0.1", osImage: "Debian" },
  },
});
export const manifest = (name: string) => ({
  apiVersion: "v1",
  kind: "Pod",
  metadata: { name, namespace: "default", annotations: { "kubelet.io/manifest-hash": "0123456789abcdef" } },
  spec: { containers: [{ name: "app", image: "local/busybox:stable", env: [{ name: "GEN", value: "1" }] }] },
});
export const status = (i: number) => ({
  phase: "Running",
  conditions: ["PodReadyToStartContainers", "Initialized", "ContainersReady", "Ready", "PodScheduled"].map((type) => ({
    type,
    status: "True",
    lastTransitionTime: now,
  })),
  hostIP: "127.0.0.1",
  podIP: `10.0.${i >> 8}.${i & 255}`,
  podIPs: [{ ip: `10.0.${i >> 8}.${i & 255}` }],
  startTime: now,
  qosClass: "BestEffort",
  containerStatuses: [
    {
      name: "app",
      image: "local/busybox:stable",
      imageID: "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
      containerID: `fake://${i.toString(16).padStart(64, "0")}`,
      ready: true,
      started: true,
      restartCount: 0,
      state: { running: { startedAt: now } },
    },
  ],
});
