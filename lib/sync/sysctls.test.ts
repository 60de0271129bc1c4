// The sysctl allowlist: the safe set, --allowed_unsafe_sysctls, host namespaces, and bad patterns.
import { expect, test } from "bun:test";
import { createSysctlAllowlist } from "./sysctls.ts";
import { testPod } from "../testing/pods.ts";

const withSysctls = (names: string[], spec = {}) =>
  testPod("web", { ...spec, securityContext: { sysctls: names.map((name) => ({ name, value: "1" })) } });

test("a safe sysctl is allowed and an unsafe one is forbidden unless allowlisted, exactly or by prefix", () => {
  const none = createSysctlAllowlist([]);
  expect(none.check(withSysctls(["net.ipv4.tcp_syncookies", "kernel/shm_rmid_forced"]))).toBeUndefined();
  expect(none.check(withSysctls(["kernel.msgmax"]))).toBe('forbidden sysctl: "kernel.msgmax" not allowlisted');
  expect(createSysctlAllowlist(["kernel.msgmax"]).check(withSysctls(["kernel.msgmax"]))).toBeUndefined();
  expect(createSysctlAllowlist(["net.core.*"]).check(withSysctls(["net.core.somaxconn"]))).toBeUndefined();
});

test("net.* sysctls are forbidden for a host-network pod, IPC ones for a host-IPC pod", () => {
  const list = createSysctlAllowlist([]);
  expect(list.check(withSysctls(["net.ipv4.tcp_syncookies"], { hostNetwork: true }))).toBe(
    'forbidden sysctl: "net.ipv4.tcp_syncookies" not allowed with host net enabled',
  );
  expect(list.check(withSysctls(["kernel.shm_rmid_forced"], { hostIPC: true }))).toBe(
    'forbidden sysctl: "kernel.shm_rmid_forced" not allowed with host ipc enabled',
  );
});

test("--allowed_unsafe_sysctls refuses a sysctl that is not namespaced, naming it", () => {
  expect(() => createSysctlAllowlist(["vm.swappiness"])).toThrow(
    '--allowed_unsafe_sysctls: the sysctls "vm.swappiness" are not known to be namespaced',
  );
});
