// Pod UIDs: the node in every derived UID, the manifest's own UID kept, a running pod's earlier UID kept.
import { describe, expect, test } from "bun:test";
import { podSpecHash } from "./hash.ts";
import { readManifests } from "./manifest.ts";
import { assignNodeUids, nodeUid, sourceUid } from "./pod-uid.ts";
import { ANNOTATION } from "./types.ts";
import { testPod } from "../testing/pods.ts";

describe("pod UIDs", () => {
  const none = () => false;

  test("a pod without a UID gets one with the node in it: two nodes never share it, an edit keeps it", () => {
    const pod = testPod("web");
    expect(pod.metadata.uid).toBe(sourceUid("file", "default", "web"));
    const onA = assignNodeUids("node-a", none)(pod);
    const onB = assignNodeUids("node-b", none)(pod);
    expect(onA.metadata.uid).toBe(nodeUid("node-a", "file", "default", "web"));
    expect(onB.metadata.uid).toBe(nodeUid("node-b", "file", "default", "web"));
    expect(new Set([pod.metadata.uid, onA.metadata.uid, onB.metadata.uid]).size).toBe(3);
    expect(onA.metadata.annotations[ANNOTATION.hash]).toBe(podSpecHash(onA));
    const edited = testPod("web", { containers: [{ name: "c", image: "local/busybox:other" }] });
    expect(assignNodeUids("node-a", none)(edited).metadata.uid).toBe(onA.metadata.uid);
  });

  // Pinned values: a release that derived other UIDs would restart every pod on upgrade instead of adopting it.
  test("derived UIDs are the same in every release: the first 128 bits of sha256 of the path, as a UUID", () => {
    expect(sourceUid("file", "default", "web")).toBe("a20f9b64-b204-a930-5b1c-cfc290826d90");
    expect(nodeUid("node-a", "file", "default", "web")).toBe("9209fb79-99fc-0e1d-1b99-d3dfb27995eb");
  });

  test("a UID written in the manifest is kept", () => {
    const text = JSON.stringify({
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name: "web", uid: "11111111-2222-3333-4444-555555555555" },
      spec: { containers: [{ name: "c", image: "local/busybox:stable" }] },
    });
    const [pod] = readManifests(text, { source: "file", origin: "web.yaml" }).pods;
    expect(assignNodeUids("node-a", none)(pod!).metadata.uid).toBe("11111111-2222-3333-4444-555555555555");
  });

  test("a pod still running under its earlier, node-less UID keeps it (an upgrade adopts its containers)", () => {
    const pod = testPod("web");
    const earlier = sourceUid("file", "default", "web");
    const adopted = assignNodeUids("node-a", (uid) => uid === earlier)(pod);
    expect(adopted).toBe(pod);
  });
});
