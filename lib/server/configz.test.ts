import { describe, expect, test } from "bun:test";
import { DEFAULT_CONFIG } from "../config/config-types.ts";
import { goDuration, kubeletConfiguration } from "./configz.ts";

describe("configz", () => {
  test("durations read as Go's time.Duration strings", () => {
    expect([0, 500, 10_000, 60_000, 90_500, 5_400_000].map(goDuration)).toEqual([
      "0s",
      "500ms",
      "10s",
      "1m0s",
      "1m30.5s",
      "1h30m0s",
    ]);
  });

  test("the settings in effect are a KubeletConfiguration: its field names, nesting, units and duration strings", () => {
    const config = kubeletConfiguration({ ...DEFAULT_CONFIG, config: "/etc/kubelet.d", anonymousAuth: false });
    expect(config).toMatchObject({
      kind: "KubeletConfiguration",
      apiVersion: "kubelet.config.k8s.io/v1beta1",
      staticPodPath: "/etc/kubelet.d",
      syncFrequency: "10s",
      volumeStatsAggPeriod: "1m0s",
      nodeLeaseDurationSeconds: 40,
      authentication: { anonymous: { enabled: false } },
      logging: { verbosity: 0 },
    });
    expect(config).not.toHaveProperty("config");
  });
});
