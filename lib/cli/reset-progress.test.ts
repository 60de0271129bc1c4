// reset's progress on a terminal (one line redrawn under the removals) and elsewhere (a line per pod), on a fake clock.
import { describe, expect, test } from "bun:test";
import { FakeClock } from "../testing/fake-clock.ts";
import { createResetProgress } from "./reset-progress.ts";

/** A progress writing into `written`; `screen()` is what a terminal would show (each \r\x1b[2K clears the line). */
function harness(tty: boolean, columns = 120) {
  const clock = new FakeClock();
  let written = "";
  const out = { columns, write: (text: string) => ((written += text), true) } as unknown as NodeJS.WritableStream;
  const progress = createResetProgress({ out, tty, clock });
  const screen = () =>
    written
      .split("\n")
      .map((line) => line.split("\r\x1b[2K").at(-1))
      .filter((line, i, all) => line !== "" || i < all.length - 1);
  return { clock, progress, written: () => written, screen };
}

const ignoring = { seconds: 30.02, ignoredSigterm: [{ container: "httpd", graceSeconds: 30 }] };

describe("reset progress", () => {
  test("off a terminal, each pod gets a line as it begins to stop, with its grace period, and one as it has stopped", () => {
    const h = harness(false);
    h.progress.line("removing container k8s_app_a (pod default/a)");
    h.progress.stopping("default/a", 30);
    h.progress.stopping("default/b", 30);
    h.progress.stopped("default/a", ignoring);
    h.progress.stopped("default/b", { seconds: 1.2, ignoredSigterm: [] });
    h.progress.close();
    expect(h.written()).toBe(
      [
        "removing container k8s_app_a (pod default/a)",
        "stopping pod default/a (grace period 30s)",
        "stopping pod default/b (grace period 30s)",
        "stopped pod default/a in 30.0s (container httpd ignored SIGTERM; killed after 30s)",
        "stopped pod default/b in 1.2s",
        "",
      ].join("\n"),
    );
  });

  test("on a terminal, one line of the pods still stopping counts their grace left down each second, under the removals", async () => {
    const h = harness(true);
    h.progress.line("removing container k8s_app_a (pod default/a)");
    h.progress.stopping("default/a", 30);
    h.progress.stopping("default/b", 10);
    expect(h.screen()).toEqual([
      "removing container k8s_app_a (pod default/a)",
      "stopping 2 pods: default/a 30s left, default/b 10s left",
    ]);
    await h.clock.advance(3000);
    expect(h.screen().at(-1)).toBe("stopping 2 pods: default/a 27s left, default/b 7s left");
    h.progress.stopped("default/b", { seconds: 3, ignoredSigterm: [] });
    expect(h.screen()).toEqual([
      "removing container k8s_app_a (pod default/a)",
      "stopped pod default/b in 3.0s",
      "stopping 1 pod: default/a 27s left",
    ]);
    h.progress.stopped("default/a", ignoring);
    h.progress.close();
    expect(h.screen().at(-1)).toBe(
      "stopped pod default/a in 30.0s (container httpd ignored SIGTERM; killed after 30s)",
    );
    expect(h.clock.pendingTimers).toBe(0);
  });

  test("on a narrow terminal the pods' line is cut to its width, so that redrawing it covers it", () => {
    const h = harness(true, 30);
    h.progress.stopping("default/a-long-pod-name", 30);
    expect(h.screen().at(-1)).toBe("stopping 1 pod: default/a-lo…");
    expect(h.screen().at(-1)!.length).toBe(29);
    h.progress.close();
  });

  test("a terminal that tells no width (0 columns) is taken as 80 wide", () => {
    const h = harness(true, 0);
    h.progress.stopping("default/web", 30);
    expect(h.screen().at(-1)).toBe("stopping 1 pod: default/web 30s left");
    h.progress.close();
  });
});
