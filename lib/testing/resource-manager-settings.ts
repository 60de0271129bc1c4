// Settings for the node's resource managers in tests: static CPU manager with CPU 0 reserved, single-numa-node,
// no memory manager, in a fresh root dir; each test overrides what it is about.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ResourceManagerSettings } from "../node/cm/resource-managers.ts";

/** Settings for createResourceManagers, `over` applied last. */
export function testResourceManagerSettings(over: Partial<ResourceManagerSettings> = {}): ResourceManagerSettings {
  return {
    rootDir: mkdtempSync(join(tmpdir(), "resmgr-")),
    cpuManagerPolicy: "static",
    cpuManagerPolicyOptions: {},
    cpuManagerReconcilePeriod: 10_000,
    reservedCpus: "0",
    memoryManagerPolicy: "None",
    reservedMemory: [],
    topologyManagerPolicy: "single-numa-node",
    topologyManagerScope: "container",
    topologyManagerPolicyOptions: {},
    kubeReserved: {},
    systemReserved: {},
    evictionHard: {},
    ...over,
  };
}

/** A runtime with no containers that accepts every update (managers whose reconcile is not under test). */
export const idleRuntime = { listContainers: async () => [], updateContainerResources: async () => {} };
