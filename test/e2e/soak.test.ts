// The soak of bench/soak.ts, shortened to 60 s for every test run (`npm run bench` runs 10 minutes).
import { expect, test } from "bun:test";
import { runSoak, soakTable } from "../../bench/soak.bench.ts";
import { describeWithServices } from "../../lib/testing/services.ts";

describeWithServices("soak", (services) => {
  test("60 s of churn up to 30 pods leaves no container, pod directory, volume, file descriptor or timer behind, RSS flat, and no heap beyond the events it keeps", async () => {
    const report = await runSoak({ services, seconds: 60, peak: 30 });
    console.log(soakTable(report));
    expect(report.actions.added).toBeGreaterThan(30);
    expect(report.actions.edited).toBeGreaterThan(60);
    expect(report.leaked).toEqual({ containers: [], podDirs: [], volumes: 0 });
    expect(report.fds.after).toBeLessThanOrEqual(report.fds.before);
    expect(report.timers.before).toBeGreaterThan(0);
    expect(report.timers.after).toBeLessThanOrEqual(report.timers.before);
    // Flat: at the same pod count, the end of the run needs no more memory than halfway (+10 %).
    expect(report.rss.runEndMb).toBeLessThan(report.rss.midRunMb * 1.1);
    // The heap after clean-up holds no more than with 30 pods live at the end of the ramp, but for the events
    // recorded since: the event ring keeps events of pods long gone (a plain object for the event and one for
    // its object; its message, key and timestamps), up to 1,000 and then no more (the 540 s soak in
    // bench/results.md is flat once there). Warm-up (code compiled, caches filled) is over by the ramp's end.
    const ramp = report.phases.find((p) => p.phase === "end of the ramp")!;
    const cleaned = report.phases.find((p) => p.phase === "after clean-up")!;
    const eventsSince = cleaned.events - ramp.events;
    expect(cleaned.objects).toBeLessThanOrEqual(ramp.objects + 3 * eventsSince);
    expect(cleaned.strings).toBeLessThanOrEqual(ramp.strings + 8 * eventsSince);
  }, 300_000);
});
