import { describe, expect, test } from "bun:test";
import { checkHostPathSafety, protectedHostPaths, systemTreeOf, type HostPathPolicy } from "./host-paths.ts";
import type { SourceName } from "./types.ts";
import { testPod } from "../testing/pods.ts";

/** The issues of a pod from `source` with one hostPath volume at `path`. */
function issuesFor(path: string, source: SourceName, policy: HostPathPolicy = {}) {
  const pod = testPod("p", { volumes: [{ name: "host", hostPath: { path } }] }, { source });
  return checkHostPathSafety(pod, policy);
}

/** "error", "warning" or "ok" for one path, source and policy. */
function verdict(path: string, source: SourceName, policy: HostPathPolicy = {}): string {
  const issues = issuesFor(path, source, policy);
  return issues.length === 0 ? "ok" : issues[0]!.severity;
}

describe("host paths by source", () => {
  const cases: Array<[string, SourceName, HostPathPolicy, string]> = [
    // Beneath the system trees: refused to an untrusted source, accepted from a trusted one.
    ["/etc/cron.d", "http", {}, "error"],
    ["/etc/cron.d", "file", {}, "ok"],
    ["/root/.ssh", "url", {}, "error"],
    ["/usr/local/bin", "etcd", {}, "error"],
    ["/boot/grub", "http", {}, "error"],
    ["/bin", "http", {}, "error"],
    ["/lib64/ld-linux-x86-64.so.2", "http", {}, "error"],
    ["/var/lib/kubelet/pods", "http", {}, "error"],
    ["/var/lib/containerd/io.containerd.snapshotter.v1.overlayfs", "http", {}, "error"],
    ["/var/run/docker.sock", "http", {}, "error"],
    ["/run/containerd/containerd.sock", "http", {}, "error"],
    ["/sys/fs/cgroup", "http", {}, "error"],
    ["/sys/fs/cgroup", "file", {}, "ok"],
    ["/dev/sda", "url", {}, "error"],
    ["/proc/1/root", "file", {}, "error"],
    ["/var/spool/cron/crontabs", "http", {}, "error"],
    // Above a system tree: it holds it.
    ["/var/lib", "http", {}, "error"],
    ["/run", "http", {}, "error"],
    ["/var", "etcd", {}, "error"],
    // Outside every tree: anyone.
    ["/srv/data", "http", {}, "ok"],
    ["/var/log", "http", {}, "ok"],
    ["/tmp/cache", "url", {}, "ok"],
    ["/home/app/data", "etcd", {}, "ok"],
    ["/etcd-data", "http", {}, "ok"],
    ["/usrdata", "http", {}, "ok"],
    // Normalised before the check.
    ["/srv/../etc/cron.d", "http", {}, "error"],
    ["//etc//cron.d/", "http", {}, "error"],
    // The setting: listed sources, "*", none.
    ["/etc/cron.d", "http", { trustedSources: ["file", "http"] }, "ok"],
    ["/etc/cron.d", "etcd", { trustedSources: ["*"] }, "ok"],
    ["/etc/cron.d", "file", { trustedSources: [] }, "error"],
    ["/etc/kubernetes/pki", "file", { trustedSources: ["url"] }, "error"],
    // --allow_sensitive_host_paths makes every refusal a warning.
    ["/etc/cron.d", "http", { allowSensitiveHostPaths: true }, "warning"],
    ["/etc", "http", { allowSensitiveHostPaths: true }, "warning"],
    // The exact sensitive paths stay refused to trusted sources too.
    ["/etc", "file", {}, "error"],
    ["/", "file", { trustedSources: ["*"] }, "error"],
    ["/var/run/docker.sock", "file", {}, "error"],
    // The configuration's own root dir and runtime sockets.
    ["/data/kubelet/pods", "http", { protectedHostPaths: ["/data/kubelet"] }, "error"],
    ["/data/kubelet/pods", "http", {}, "ok"],
    ["/data/kubelet/pods", "file", { protectedHostPaths: ["/data/kubelet"] }, "ok"],
  ];
  for (const [path, source, policy, expected] of cases)
    test(`a hostPath at ${path} from the ${source} source with ${JSON.stringify(policy)} is ${expected}`, () => {
      expect(verdict(path, source, policy)).toBe(expected);
    });
});

describe("host path refusals", () => {
  test("the refusal names the path, the tree, the source and the setting with its value", () => {
    const [issue] = issuesFor("/etc/cron.d", "http", { trustedSources: ["file", "url"] });
    expect(issue?.path).toBe("spec.volumes[0].hostPath.path");
    expect(issue?.value).toBe("/etc/cron.d");
    expect(issue?.detail).toBe(
      "may not mount /etc or a path in or above it from the http source: only pods from --trusted_sources (file,url) may mount the node's system directories; mount a path outside them, or add http to --trusted_sources",
    );
  });

  test("a path above a tree names the tree it holds", () => {
    expect(issuesFor("/var/spool", "http")[0]?.detail).toContain(
      "may not mount /var/spool/cron or a path in or above it",
    );
  });

  test("an empty --trusted_sources is shown as none", () => {
    expect(issuesFor("/usr/bin", "file", { trustedSources: [] })[0]?.detail).toContain("--trusted_sources (none)");
  });

  test("each refused volume is its own issue with its index", () => {
    const pod = testPod(
      "p",
      {
        volumes: [
          { name: "a", hostPath: { path: "/srv" } },
          { name: "b", hostPath: { path: "/root/.ssh" } },
          { name: "c", emptyDir: {} },
          { name: "d", hostPath: { path: "/usr/local/bin" } },
        ],
      },
      { source: "http" },
    );
    expect(checkHostPathSafety(pod, {}).map((i) => i.path)).toEqual([
      "spec.volumes[1].hostPath.path",
      "spec.volumes[3].hostPath.path",
    ]);
  });
});

describe("protected paths of a configuration", () => {
  test("are its root dir and the directories of its unix runtime sockets", () => {
    expect(
      protectedHostPaths({
        rootDir: "/data/kubelet",
        dockerEndpoint: "unix:///srv/docker/docker.sock",
        containerRuntimeEndpoint: "unix:///opt/cri/cri.sock",
      }),
    ).toEqual(["/data/kubelet", "/srv/docker", "/opt/cri"]);
  });

  test("leave out TCP endpoints and a socket at the root", () => {
    expect(
      protectedHostPaths({
        rootDir: "/var/lib/kubelet",
        dockerEndpoint: "tcp://10.0.0.1:2375",
        containerRuntimeEndpoint: "unix:///x.sock",
      }),
    ).toEqual(["/var/lib/kubelet"]);
  });

  test("a system tree is found for a path in it and for a directory above it, none for a sibling", () => {
    expect(systemTreeOf("/etc/ssh/sshd_config")).toBe("/etc");
    expect(systemTreeOf("/var/lib")).toBe("/var/lib/kubelet");
    expect(systemTreeOf("/var/libx")).toBeUndefined();
  });
});
