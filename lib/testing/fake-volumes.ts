// A VolumeManager that mounts nothing, for sync tests that need no real directories; containers'
// termination logs are whatever a test puts in `terminationLogs` under `<uid>/<name>/<attempt>`.
import type { VolumeManager } from "../node/volumes/volumes.ts";

export function fakeVolumes(terminationLogs = new Map<string, string>()): VolumeManager {
  return {
    setup: async () => new Map(),
    version: () => "",
    teardown: async () => {},
    podDirs: async () => [],
    terminationLog: async (uid, name, attempt) => `/fake/pods/${uid}/containers/${name}/${attempt}`,
    readTerminationLog: async (uid, name, attempt) => terminationLogs.get(`${uid}/${name}/${attempt}`) ?? "",
  };
}
