import { expect, test } from "bun:test";
import { legacyWatchURL } from "./legacy-watch.ts";

const rewritten = (path: string) => {
  const url = legacyWatchURL(new URL(path, "https://node:10250"));
  return url && decodeURIComponent(url.pathname + url.search);
};

test.each([
  ["/api/v1/watch/pods", "/api/v1/pods?watch=true"],
  ["/api/v1/watch/pods?resourceVersion=5", "/api/v1/pods?resourceVersion=5&watch=true"],
  ["/api/v1/watch/namespaces/default/pods", "/api/v1/namespaces/default/pods?watch=true"],
  [
    "/api/v1/watch/namespaces/default/pods/web",
    "/api/v1/namespaces/default/pods?watch=true&fieldSelector=metadata.name=web",
  ],
  [
    "/api/v1/watch/namespaces/default/pods/web?fieldSelector=status.phase%3DRunning",
    "/api/v1/namespaces/default/pods?fieldSelector=status.phase=Running,metadata.name=web&watch=true",
  ],
  ["/api/v1/watch/events", "/api/v1/events?watch=true"],
  ["/api/v1/watch/namespaces", "/api/v1/namespaces?watch=true"],
  ["/api/v1/watch/namespaces/kube-system", "/api/v1/namespaces?watch=true&fieldSelector=metadata.name=kube-system"],
  ["/apis/events.k8s.io/v1/watch/namespaces/a/events", "/apis/events.k8s.io/v1/namespaces/a/events?watch=true"],
])("%s is watched as %s", (path, expected) => {
  expect(rewritten(path)).toBe(expected);
});

test.each([["/api/v1/pods"], ["/api/v1/watch"], ["/api/v1/watch/namespaces/default/pods/web/log"]])(
  "%s is not a legacy watch",
  (path) => {
    expect(rewritten(path)).toBeUndefined();
  },
);
