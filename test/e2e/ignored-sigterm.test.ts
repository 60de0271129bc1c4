// A pod whose PID 1 ignores SIGTERM, edited under `kubelet run` on each runtime: the edit waits out the grace period
// and the kubelet says so once ("container app ignored SIGTERM; killed after 4s"), as a warning and an event.
import { expect } from "bun:test";
import { killKubeletsAfterAll, test } from "./harness-kubelet.ts";
import { describeOnRuntimes, staticPodNode } from "./harness-runtimes.ts";

const POD = "e2e-sigterm-web";
const GRACE = 4;

describeOnRuntimes("a container that ignores SIGTERM", (services, rt) => {
  killKubeletsAfterAll();
  const node = staticPodNode("sigterm", services, rt, [POD]);
  /** `sleep` as PID 1: the kernel gives PID 1 no default action for SIGTERM, so only SIGKILL ends it. */
  const write = (version: string) =>
    node.write(POD, {
      terminationGracePeriodSeconds: GRACE,
      containers: [
        { name: "app", image: services.busybox, command: ["sleep", "600"], env: [{ name: "V", value: version }] },
      ],
    });

  test("an edit of the pod says once that its container ignored SIGTERM and was killed after the grace period", async () => {
    write("1");
    const kubelet = await node.start();
    const running = (pod: Awaited<ReturnType<typeof kubelet.pod>>) =>
      pod?.status?.containerStatuses?.find((c) => c.name === "app" && c.state?.running)?.containerID;
    const first = await kubelet.waitFor("the first container running", async () => running(await kubelet.pod(POD)));
    write("2");
    await kubelet.waitFor(
      "the edit's container running",
      async () => {
        const id = running(await kubelet.pod(POD));
        return id && id !== first ? id : undefined;
      },
      60_000,
    );
    // The log line and the event are made together, when the stop ended: a second line would be out with the first.
    const said = () => kubelet.output.split("\n").filter((line) => line.includes("ignored SIGTERM"));
    const lines = await kubelet.waitFor("the ignored SIGTERM said", () => (said().length ? said() : undefined));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(`${POD}: container app ignored SIGTERM; killed after ${GRACE}s`);
    const events = (await (await kubelet.api("/events")).json()) as { items?: Array<{ reason: string }> };
    expect((events.items ?? []).filter((e) => e.reason === "IgnoredSIGTERM")).toHaveLength(1);
    await kubelet.stop();
  }, 120_000);
});
