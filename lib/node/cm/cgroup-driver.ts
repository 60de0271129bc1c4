// Which cgroup driver pods are placed with, and whether QoS cgroups are on: the kubelet's driver
// must be the container runtime's (the kubelet refuses to start on a mismatch), an unset driver
// follows the runtime's, and QoS cgroups are on by default only where they were shown to work.
import { existsSync } from "node:fs";
import { KubeletError } from "../../api/types.ts";
import type { CgroupDriver } from "./cgroups.ts";

/** The driver chosen and where it came from, for the start-up log. */
export interface DriverChoice {
  driver: CgroupDriver;
  /** "configured", "the container runtime's", or why it was guessed. */
  source: string;
}

/**
 * The driver to use. `configured` is --cgroup_driver / cgroupDriver ("" = unset); `runtime` is the driver the
 * container runtime reports (the Docker Engine's GET /info; undefined when it did not answer or does not say);
 * `hostDefault` is what a runtime picks on this host when it is not told (systemd on cgroup v2 under systemd, else
 * cgroupfs). Only the Docker shim reports a driver, so the mismatch keeps the Go kubelet's (dockershim's) wording.
 */
export function chooseCgroupDriver(
  configured: "" | CgroupDriver,
  runtime: string | undefined,
  hostDefault: CgroupDriver,
): DriverChoice {
  if (runtime === "cgroupfs" || runtime === "systemd") {
    if (configured && configured !== runtime)
      throw new KubeletError(
        "CgroupDriverMismatch",
        `misconfiguration: kubelet cgroup driver: "${configured}" is different from docker cgroup driver: "${runtime}": set --cgroup_driver (cgroupDriver) to ${runtime}, or leave it unset to follow the container runtime's`,
      );
    return {
      driver: runtime,
      source: configured ? "configured, as the container runtime's" : "the container runtime's",
    };
  }
  if (configured)
    return { driver: configured, source: "configured; the container runtime's was not known to check it" };
  return {
    driver: hostDefault,
    source: `the container runtime did not report one (${runtime === undefined ? "no answer" : `"${runtime}"`}): the runtimes' default on this host`,
  };
}

/** The driver a runtime (Docker, containerd) uses on this host when it is not told: systemd on cgroup v2 booted with systemd, else cgroupfs. */
export function hostDefaultDriver(version: 1 | 2, systemdBooted = existsSync("/run/systemd/system")): CgroupDriver {
  return version === 2 && systemdBooted ? "systemd" : "cgroupfs";
}

/**
 * Whether QoS cgroups have been shown to work end to end with this version and driver. Only cgroup
 * v1 with cgroupfs has been run against a real Docker; v2 and the systemd driver are unit-tested
 * (paths, slice names, files), and with systemd the slices are made by mkdir, not as systemd units.
 */
export function qosCgroupsVerified(version: 1 | 2, driver: CgroupDriver): boolean {
  return version === 1 && driver === "cgroupfs";
}

/** Whether pods get QoS cgroups and kubepods is bounded, and the one line start-up says about it. */
export interface QosPlan {
  qos: boolean;
  enforcePods: boolean;
  warning?: string;
}

/**
 * QoS cgroups as configured where they were shown to work; elsewhere on only when the operator
 * asked (cgroupsPerQOS or enforceNodeAllocatable given), with a warning, and off by default, said once.
 */
export function planQosCgroups(input: {
  cgroupsPerQos: boolean;
  enforcePods: boolean;
  /** cgroupsPerQOS or enforceNodeAllocatable came from a flag or the config file. */
  explicit: boolean;
  version: 1 | 2;
  driver: CgroupDriver;
}): QosPlan {
  const { cgroupsPerQos, enforcePods, version, driver } = input;
  if (!cgroupsPerQos || qosCgroupsVerified(version, driver)) return { qos: cgroupsPerQos, enforcePods };
  const where = `cgroup v${version} with the ${driver} driver`;
  if (input.explicit)
    return {
      qos: true,
      enforcePods,
      warning: `QoS cgroups on ${where} are only unit-tested (the slices are made directly, not as systemd units): check the pod cgroups' limits under /sys/fs/cgroup`,
    };
  return {
    qos: false,
    enforcePods: false,
    warning: `QoS cgroups are off by default on ${where}, which has not been shown to work end to end: pods run in the container runtime's default cgroup; give --cgroups_per_qos=true (cgroupsPerQOS: true) to turn them on`,
  };
}
