// The status manager: statuses kept by pod, one version, listeners told of each new one.
import { describe, expect, test } from "bun:test";
import type { V1PodStatus } from "../api/types.ts";
import { createStatusManager } from "./status-manager.ts";

const running: V1PodStatus = { phase: "Running", hostIP: "10.0.0.1" };
const failed: V1PodStatus = { phase: "Failed", reason: "Evicted", hostIP: "10.0.0.1" };

describe("status manager", () => {
  test("a pod's status is kept until it is deleted, and deleting it is no new version", () => {
    const statuses = createStatusManager();
    expect(statuses.get("a")).toBeUndefined();
    statuses.set("a", running);
    expect(statuses.get("a")).toEqual(running);
    const version = statuses.version();
    statuses.delete("a");
    expect(statuses.get("a")).toBeUndefined();
    expect(statuses.version()).toBe(version);
  });

  test("a status that differs from the one kept is a new version; the same status again is not", () => {
    const statuses = createStatusManager();
    statuses.set("a", running);
    expect(statuses.version()).toBe(1);
    statuses.set("a", { ...running });
    expect(statuses.version()).toBe(1);
    statuses.set("a", failed);
    expect(statuses.version()).toBe(2);
    statuses.set("a", undefined);
    expect(statuses.version()).toBe(3);
  });

  test("changed() is a new version for what is not a status (a pod added or removed)", () => {
    const statuses = createStatusManager();
    statuses.changed();
    statuses.changed();
    expect(statuses.version()).toBe(2);
  });

  test("listeners hear every new version, after the change so they read it, until they unsubscribe", () => {
    const statuses = createStatusManager();
    const heard: Array<[number, string | undefined]> = [];
    const unsubscribe = statuses.onChange(() => heard.push([statuses.version(), statuses.get("a")?.phase]));
    statuses.set("a", running);
    statuses.set("a", running);
    statuses.changed();
    statuses.set("a", failed);
    expect(heard).toEqual([
      [1, "Running"],
      [2, "Running"],
      [3, "Failed"],
    ]);
    unsubscribe();
    statuses.changed();
    expect(heard).toHaveLength(3);
  });
});
