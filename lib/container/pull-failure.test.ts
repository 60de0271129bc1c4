// Which pull failures are lasting, over the messages Docker 20.10 and containerd 1.6 return (the loopback ones
// recorded on the test services, the DNS ones in Go's wording).
import { expect, test } from "bun:test";
import { lastingPullFailure, OFFLINE_IMAGES_DOC, withOfflineHint } from "./pull-failure.ts";

const cases: Array<[string, string, ReturnType<typeof lastingPullFailure>]> = [
  [
    "Docker, a registry host with no DNS record",
    'cannot pull image registry.k8s.io/pause:3.10: Get "https://registry.k8s.io/v2/": dial tcp: lookup registry.k8s.io on 10.255.255.53:53: no such host',
    "name-resolution",
  ],
  [
    "Docker, a DNS server that fails",
    'Get "https://registry.k8s.io/v2/": dial tcp: lookup registry.k8s.io on 127.0.0.53:53: server misbehaving',
    "name-resolution",
  ],
  [
    "Docker, no DNS server reachable (an air-gapped node)",
    'Get "https://registry.k8s.io/v2/": dial tcp: lookup registry.k8s.io on 10.0.0.2:53: dial udp 10.0.0.2:53: connect: network is unreachable',
    "name-resolution",
  ],
  [
    "containerd, a registry host with no DNS record",
    'failed to get sandbox image "registry.k8s.io/pause:3.8": failed to pull image "registry.k8s.io/pause:3.8": failed to pull and unpack image "registry.k8s.io/pause:3.8": failed to resolve reference "registry.k8s.io/pause:3.8": failed to do request: Head "https://registry.k8s.io/v2/pause/manifests/3.8": dial tcp: lookup registry.k8s.io: Temporary failure in name resolution',
    "name-resolution",
  ],
  ["Bun's fetch", "getaddrinfo ENOTFOUND registry.example", "name-resolution"],
  [
    "Docker, an image a reachable registry does not have",
    "cannot pull image 127.0.0.1:15000/offline/absent:1: (HTTP code 404) unexpected - manifest for 127.0.0.1:15000/offline/absent:1 not found: manifest unknown: manifest unknown",
    "not-found",
  ],
  [
    "containerd, an image a reachable registry does not have",
    'cannot pull image "127.0.0.1:15000/offline/absent:1": cannot PullImage: failed to pull and unpack image "127.0.0.1:15000/offline/absent:1": failed to resolve reference "127.0.0.1:15000/offline/absent:1": 127.0.0.1:15000/offline/absent:1: not found',
    "not-found",
  ],
  [
    "Docker Hub, a repository that does not exist",
    "pull access denied for nosuchuser/nosuchimage, repository does not exist or may require 'docker login': denied: requested access to the resource is denied",
    "not-found",
  ],
  [
    "Docker, a registry that refuses connections (it may come up)",
    'Get "http://127.0.0.1:1/v2/": dial tcp 127.0.0.1:1: connect: connection refused',
    undefined,
  ],
  [
    "containerd, a registry that refuses connections",
    'failed to resolve reference "127.0.0.1:1/offline/absent:1": failed to do request: Head "http://127.0.0.1:1/v2/offline/absent/manifests/1": dial tcp 127.0.0.1:1: connect: connection refused',
    undefined,
  ],
  ["a registry that answers 503", "received unexpected HTTP status: 503 Service Unavailable", undefined],
];

for (const [name, message, kind] of cases) {
  test(`a pull failure is ${kind ?? "one that may clear"}: ${name}`, () => {
    expect(lastingPullFailure(message)).toBe(kind);
  });
}

test("the offline hint is added once, after the message", () => {
  const once = withOfflineHint("cannot pull image x");
  expect(once).toBe(`cannot pull image x; ${OFFLINE_IMAGES_DOC}`);
  expect(withOfflineHint(once)).toBe(once);
});
