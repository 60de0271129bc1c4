// The pod observer on the in-memory runtime: what it asks the runtime, and how much of it at once.
import { describe, expect, test } from "bun:test";
import { FakeClock } from "../testing/fake-clock.ts";
import { FakeRuntime } from "../testing/fake-runtime.ts";
import { testPod } from "../testing/pods.ts";
import { INSPECTIONS_IN_FLIGHT, createPodObserver } from "./pod-observer.ts";

/** The in-memory runtime, its inspections held until released, counting how many are in flight at once. */
class HeldRuntime extends FakeRuntime {
  inFlight = 0;
  most = 0;
  readonly held: Array<() => void> = [];
  override async inspectContainer(id: string) {
    this.inFlight++;
    this.most = Math.max(this.most, this.inFlight);
    await new Promise<void>((resolve) => this.held.push(resolve));
    this.inFlight--;
    return super.inspectContainer(id);
  }
}

describe("pod observer", () => {
  test("never has more than INSPECTIONS_IN_FLIGHT inspections in flight, and observes every container", async () => {
    const runtime = new HeldRuntime(new FakeClock());
    const pods = Array.from({ length: 50 }, (_, i) => testPod(`p${i}`));
    for (const pod of pods) runtime.seedRunning(pod);
    const observing = createPodObserver({ runtime }).observe();
    let released = 0;
    while (released < pods.length) {
      await Bun.sleep(1);
      for (const release of runtime.held.splice(0)) release(), released++;
    }
    const observed = await observing;
    expect(runtime.most).toBe(INSPECTIONS_IN_FLIGHT);
    expect(pods.every((pod) => observed.get(pod.metadata.uid)?.containers.length === 1)).toBe(true);
  });
});
