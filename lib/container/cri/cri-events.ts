// GetContainerEvents' answers as the Evented PLEG's entries: which container (or sandbox) each names, the state the
// event makes true and its labels, kept to what the kubelet made (the relist's own rule), as evented.go reads them.
import type { CriContainerEvent } from "../cri-types.ts";
import type { ContainerState } from "../runtime.ts";
import type { StreamedEntry } from "../pleg/evented.ts";

/** The state each event type makes true; a deleted container is no longer listed (undefined). */
const STATE: Record<CriContainerEvent["container_event_type"], ContainerState | undefined> = {
  CONTAINER_CREATED_EVENT: "CONTAINER_CREATED",
  CONTAINER_STARTED_EVENT: "CONTAINER_RUNNING",
  CONTAINER_STOPPED_EVENT: "CONTAINER_EXITED",
  CONTAINER_DELETED_EVENT: undefined,
};

/**
 * The entry an event makes true, or undefined for one the relist would not list either (not the kubelet's, as
 * `ours` says of labels). A sandbox's event names the sandbox's id; a deleted container's statuses may no longer
 * hold it, so its labels are the pod's (its pod UID is what the sync loop needs).
 */
export function streamedEntry(
  event: CriContainerEvent,
  ours: (labels: Record<string, string>) => boolean,
): StreamedEntry | undefined {
  const sandbox = event.pod_sandbox_status;
  const status = event.containers_statuses?.find((c) => c.id === event.container_id);
  const labels = status?.labels ?? sandbox?.labels ?? {};
  if (!ours(labels)) return undefined;
  return {
    id: event.container_id,
    state: STATE[event.container_event_type],
    labels,
    createdAtNs: Number(event.created_at),
  };
}
