// The fix named for each way a runtime socket does not answer, and grpc-js's error cut to its cause.
import { expect, test } from "bun:test";
import { grpcConnectionCause, unreachableFix } from "./unreachable.ts";

const docker = { flag: "--docker_endpoint", service: "docker" } as const;
const containerd = { flag: "--container_runtime_endpoint", service: "containerd" } as const;

for (const [detail, which, fix] of [
  [
    "connect EACCES /var/run/docker.sock",
    docker,
    "permission denied: run the kubelet as root or as a member of the docker group, or give --docker_endpoint a socket this user may open",
  ],
  [
    "connect EACCES /run/containerd/containerd.sock",
    containerd,
    "permission denied: run the kubelet as root, or give --container_runtime_endpoint a socket this user may open",
  ],
  [
    "connect ENOENT /var/run/docker.sock",
    docker,
    "no socket there: start docker (systemctl start docker) or give --docker_endpoint the socket it listens on",
  ],
  [
    "connect ECONNREFUSED 127.0.0.1:2375",
    docker,
    "nothing accepts connections there: start docker (systemctl start docker) or give --docker_endpoint the address it listens on",
  ],
  ["socket hang up", docker, undefined],
] as const)
  test(`"${detail}" on ${which.service} names the fix: ${fix ?? "none"}`, () => {
    expect(unreachableFix(detail, which)).toBe(fix);
  });

test("grpc-js's connection error is cut to its cause: no empty 'Resolution note'", () => {
  expect(
    grpcConnectionCause(
      "No connection established. Last error: Error: connect ENOENT /run/containerd/containerd.sock. Resolution note: ",
    ),
  ).toBe("connect ENOENT /run/containerd/containerd.sock");
  expect(grpcConnectionCause("Deadline exceeded")).toBe("Deadline exceeded");
});
