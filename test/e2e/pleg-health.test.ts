// The PLEG's health on /healthz (upstream's Healthy(), pleg/health.ts): a kubelet on Docker (the sync loop's listing
// with the Engine's events), on containerd 1.6 (the generic PLEG, relisting every second) and on containerd 1.7 (the
// Evented PLEG) reports "pleg" healthy once it relists.
import { expect } from "bun:test";
import { test } from "./harness-kubelet.ts";
import { describeOnRuntimes, staticPodNode } from "./harness-runtimes.ts";

describeOnRuntimes(
  "PLEG health",
  (services, rt) => {
    const node = staticPodNode("pleg-health", services, rt, []);

    test("/healthz lists the pleg check as passing, and /healthz/pleg answers ok", async () => {
      const kubelet = await node.start();
      const verbose = await kubelet.waitFor("[+]pleg ok", async () => {
        const text = await (await kubelet.api("/healthz?verbose")).text();
        return text.includes("[+]pleg ok") ? text : undefined;
      });
      expect(verbose).toContain("healthz check passed");
      const check = await kubelet.api("/healthz/pleg");
      expect(check.status).toBe(200);
      expect(await check.text()).toBe("ok");
    });
  },
  ["docker", "remote", "remote-1.7"],
);
