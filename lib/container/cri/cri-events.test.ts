import { expect, test } from "bun:test";
import type { CriContainerEvent, CriContainerStatus, PodSandboxStatus } from "../cri-types.ts";
import { LABEL } from "../runtime.ts";
import { streamedEntry } from "./cri-events.ts";

const ours = (labels: Record<string, string>) => !!labels[LABEL.podUid] && !!labels[LABEL.containerName];
const podLabels = { [LABEL.podUid]: "uid-1", [LABEL.containerName]: "POD" };
const appLabels = { [LABEL.podUid]: "uid-1", [LABEL.containerName]: "app" };
const sandbox = { id: "sb", labels: podLabels } as unknown as PodSandboxStatus;
const status = (id: string, labels: Record<string, string>) => ({ id, labels }) as unknown as CriContainerStatus;
const event = (
  id: string,
  type: CriContainerEvent["container_event_type"],
  statuses: CriContainerStatus[] = [],
): CriContainerEvent => ({
  container_id: id,
  container_event_type: type,
  created_at: 1_800_000_000_123_456_789,
  pod_sandbox_status: sandbox,
  containers_statuses: statuses,
});

test("each event type makes its state true: created, running, exited, and a deleted container no longer listed", () => {
  const app = [status("c1", appLabels)];
  expect(streamedEntry(event("c1", "CONTAINER_CREATED_EVENT", app), ours)?.state).toBe("CONTAINER_CREATED");
  expect(streamedEntry(event("c1", "CONTAINER_STARTED_EVENT", app), ours)?.state).toBe("CONTAINER_RUNNING");
  expect(streamedEntry(event("c1", "CONTAINER_STOPPED_EVENT", app), ours)?.state).toBe("CONTAINER_EXITED");
  expect(streamedEntry(event("c1", "CONTAINER_DELETED_EVENT", app), ours)).toEqual({
    id: "c1",
    state: undefined,
    labels: appLabels,
    createdAtNs: 1_800_000_000_123_456_789,
  });
});

test("a container's labels are its status's; a sandbox's event and a deleted container's without a status carry the pod's", () => {
  expect(streamedEntry(event("c1", "CONTAINER_STOPPED_EVENT", [status("c1", appLabels)]), ours)?.labels).toBe(
    appLabels,
  );
  expect(streamedEntry(event("sb", "CONTAINER_STOPPED_EVENT"), ours)).toMatchObject({ id: "sb", labels: podLabels });
  expect(streamedEntry(event("gone", "CONTAINER_DELETED_EVENT"), ours)?.labels).toBe(podLabels);
});

test("what the kubelet did not make is left out, as the relist leaves it out", () => {
  const stranger = status("s1", { "io.kubernetes.pod.uid": "" });
  expect(streamedEntry(event("s1", "CONTAINER_STARTED_EVENT", [stranger]), ours)).toBeUndefined();
  expect(streamedEntry({ ...event("x", "CONTAINER_STARTED_EVENT"), pod_sandbox_status: null }, ours)).toBeUndefined();
});
