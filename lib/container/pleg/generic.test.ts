import { expect, test } from "bun:test";
import { FakeClock } from "../../testing/fake-clock.ts";
import { relistEvents, transitions, type RelistEntry } from "./generic.ts";

test("a relist turns state differences into the Go PLEG's lifecycle events (created counts as unknown)", () => {
  expect(transitions(undefined, "CONTAINER_CREATED")).toEqual(["ContainerChanged"]);
  expect(transitions(undefined, "CONTAINER_RUNNING")).toEqual(["ContainerStarted"]);
  expect(transitions("CONTAINER_CREATED", "CONTAINER_RUNNING")).toEqual(["ContainerStarted"]);
  expect(transitions("CONTAINER_RUNNING", "CONTAINER_EXITED")).toEqual(["ContainerDied"]);
  expect(transitions("CONTAINER_RUNNING", undefined)).toEqual(["ContainerDied", "ContainerRemoved"]);
  expect(transitions("CONTAINER_EXITED", undefined)).toEqual(["ContainerRemoved"]);
  expect(transitions("CONTAINER_RUNNING", "CONTAINER_UNKNOWN")).toEqual(["ContainerChanged"]);
  expect(transitions("CONTAINER_CREATED", "CONTAINER_UNKNOWN")).toEqual([]);
  expect(transitions("CONTAINER_EXITED", "CONTAINER_EXITED")).toEqual([]);
});

test("relisting every period raises events for changes after the first list, and stops when aborted", async () => {
  const clock = new FakeClock();
  const abort = new AbortController();
  let world: RelistEntry[] = [{ id: "a", state: "CONTAINER_RUNNING", labels: { pod: "p" } }];
  const events = relistEvents(async () => world, { periodMs: 1000, clock, signal: abort.signal });
  const next = events.next();
  await clock.advance(0);
  world = [{ id: "a", state: "CONTAINER_EXITED", labels: { pod: "p" } }];
  await clock.advance(1000);
  expect((await next).value).toMatchObject({ type: "ContainerDied", containerId: "a", labels: { pod: "p" } });
  abort.abort();
  expect((await events.next()).done).toBe(true);
});

test("each relist reports its duration, and from the second on the interval since the previous one began", async () => {
  const clock = new FakeClock();
  const abort = new AbortController();
  const timings: Array<[number, number | undefined]> = [];
  const events = relistEvents(
    async () => {
      await clock.sleep(200);
      return [{ id: `c${timings.length}`, state: "CONTAINER_RUNNING", labels: {} }];
    },
    { periodMs: 1000, clock, signal: abort.signal, relisted: (d, i) => void timings.push([d, i]) },
  );
  const next = events.next();
  await clock.advance(200);
  await clock.advance(1000);
  await clock.advance(200);
  await next;
  expect(timings).toEqual([
    [0.2, undefined],
    [0.2, 1.2],
  ]);
  abort.abort();
});
