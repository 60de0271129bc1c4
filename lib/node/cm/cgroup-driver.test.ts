// The cgroup driver must be the container runtime's; QoS cgroups are on by default only where they were shown to work.
import { describe, expect, test } from "bun:test";
import { chooseCgroupDriver, hostDefaultDriver, planQosCgroups, qosCgroupsVerified } from "./cgroup-driver.ts";

describe("chooseCgroupDriver", () => {
  test("an unset driver follows the one the runtime reports", () => {
    expect(chooseCgroupDriver("", "systemd", "cgroupfs")).toEqual({
      driver: "systemd",
      source: "the container runtime's",
    });
    expect(chooseCgroupDriver("", "cgroupfs", "systemd").driver).toBe("cgroupfs");
  });

  test("a configured driver equal to Docker's is used", () => {
    expect(chooseCgroupDriver("systemd", "systemd", "cgroupfs").driver).toBe("systemd");
  });

  test("a configured driver different from Docker's refuses to start, naming both, as the kubelet does", () => {
    expect(() => chooseCgroupDriver("systemd", "cgroupfs", "cgroupfs")).toThrow(
      'misconfiguration: kubelet cgroup driver: "systemd" is different from docker cgroup driver: "cgroupfs": set --cgroup_driver (cgroupDriver) to cgroupfs, or leave it unset to follow the container runtime\'s',
    );
    const thrown = (() => {
      try {
        chooseCgroupDriver("cgroupfs", "systemd", "cgroupfs");
      } catch (error) {
        return error;
      }
    })();
    expect(thrown).toMatchObject({ code: "CgroupDriverMismatch" });
  });

  test("without Docker's answer: the configured driver, else Docker's default on this host", () => {
    expect(chooseCgroupDriver("systemd", undefined, "cgroupfs").driver).toBe("systemd");
    expect(chooseCgroupDriver("", undefined, "systemd")).toMatchObject({
      driver: "systemd",
      source: expect.stringContaining("no answer"),
    });
    expect(chooseCgroupDriver("", "none", "cgroupfs")).toMatchObject({
      driver: "cgroupfs",
      source: expect.stringContaining('"none"'),
    });
  });

  test("Docker's default is systemd only on cgroup v2 under systemd", () => {
    expect(hostDefaultDriver(2, true)).toBe("systemd");
    expect(hostDefaultDriver(2, false)).toBe("cgroupfs");
    expect(hostDefaultDriver(1, true)).toBe("cgroupfs");
  });
});

describe("planQosCgroups", () => {
  const base = { cgroupsPerQos: true, enforcePods: true, explicit: false } as const;

  test("cgroup v1 with cgroupfs, shown to work here, keeps the defaults on without a word", () => {
    expect(qosCgroupsVerified(1, "cgroupfs")).toBe(true);
    expect(planQosCgroups({ ...base, version: 1, driver: "cgroupfs" })).toEqual({ qos: true, enforcePods: true });
  });

  for (const [version, driver] of [
    [2, "systemd"],
    [2, "cgroupfs"],
    [1, "systemd"],
  ] as const) {
    test(`cgroup v${version} with ${driver}: off by default with one warning, on with a warning when asked for`, () => {
      expect(qosCgroupsVerified(version, driver)).toBe(false);
      const byDefault = planQosCgroups({ ...base, version, driver });
      expect(byDefault).toMatchObject({ qos: false, enforcePods: false });
      expect(byDefault.warning).toContain(
        `QoS cgroups are off by default on cgroup v${version} with the ${driver} driver`,
      );
      const asked = planQosCgroups({ ...base, explicit: true, version, driver });
      expect(asked).toMatchObject({ qos: true, enforcePods: true });
      expect(asked.warning).toContain("only unit-tested");
    });
  }

  test("cgroupsPerQOS false is off everywhere, silently", () => {
    expect(
      planQosCgroups({ ...base, cgroupsPerQos: false, enforcePods: false, version: 2, driver: "systemd" }),
    ).toEqual({ qos: false, enforcePods: false });
  });
});
