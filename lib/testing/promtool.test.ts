import { expect, test } from "bun:test";
import { hasPromtool, promtoolProblems } from "./promtool.ts";

const counter = (name: string) => `# HELP ${name} A count.\n# TYPE ${name} counter\n${name} 0\n`;

(hasPromtool() || process.env.CI === "true" ? test : test.skip)(
  "promtool's problems are listed, except the upstream names that break its rules on purpose",
  () => {
    if (!hasPromtool())
      throw new Error("promtool is not installed: run `bash scripts/services.sh up` (CI=true forbids skipping)");
    expect(promtoolProblems(counter("kubelet_evented_pleg_connection_error_count"))).toEqual([]);
    expect(promtoolProblems(counter("kubelet_evented_pleg_connection_error_count"), [])).toEqual([
      'kubelet_evented_pleg_connection_error_count counter metrics should have "_total" suffix',
      'kubelet_evented_pleg_connection_error_count non-histogram and non-summary metrics should not have "_count" suffix',
    ]);
    expect(promtoolProblems(counter("my_requests"))).toEqual([
      'my_requests counter metrics should have "_total" suffix',
    ]);
    expect(promtoolProblems(counter("my_requests_total"))).toEqual([]);
  },
);
