import { expect, test } from "bun:test";
import { silentLogger } from "../log.ts";
import { FakeRuntime } from "../testing/fake-runtime.ts";
import { clampOomScores, oomScoreFloor } from "./oom-limit.ts";
import { LABEL } from "./runtime.ts";

test("a bounding set without CAP_SYS_RESOURCE puts the floor at 0; with it, at -1000", () => {
  expect(oomScoreFloor("Name:\tx\nCapBnd:\t000001fffeffffff\n")).toBe(0);
  expect(oomScoreFloor("Name:\tx\nCapBnd:\t000001ffffffffff\n")).toBe(-1000);
  expect(oomScoreFloor("Name:\tx\n")).toBe(-1000);
});

test("a negative oom_score_adj is raised to the floor, other values pass unchanged, and it is said once", async () => {
  const fake = new FakeRuntime();
  const lines: string[] = [];
  const log = { ...silentLogger, info: (m: string) => lines.push(m) };
  const runtime = clampOomScores(fake, 0, log);
  const body = (score: number, name: string) => ({
    name: `k8s_${name}_p_default_u_0`,
    Image: "local/busybox:stable",
    Labels: { [LABEL.podUid]: "u", [LABEL.containerName]: name },
    HostConfig: { OomScoreAdj: score },
  });
  await runtime.createContainer(body(-998, "a"));
  await runtime.createContainer(body(500, "b"));
  const asked = fake.calls
    .filter((c) => c.method === "createContainer")
    .map((c) => (c.args[0] as ReturnType<typeof body>).HostConfig.OomScoreAdj);
  expect(asked).toEqual([0, 500]);
  expect(lines).toHaveLength(1);
  expect(clampOomScores(fake, -1000, log)).toBe(fake);
});
