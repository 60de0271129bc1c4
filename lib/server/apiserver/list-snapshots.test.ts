import { expect, test } from "bun:test";
import { FakeClock } from "../../testing/fake-clock.ts";
import { createListSnapshots, MAX_SNAPSHOTS, SNAPSHOT_TTL_MS } from "./list-snapshots.ts";

function setUp(history?: (revision: number) => string[] | undefined, revisioned = true) {
  const clock = new FakeClock();
  const state = { revision: 1, objects: ["c", "a", "b"], reads: 0 };
  const snapshots = createListSnapshots<string>({ keyOf: (key) => key, revisioned }, { clock });
  const source = snapshots.source(() => {
    state.reads++;
    return { revision: state.revision, objects: state.objects };
  }, history);
  return { clock, state, snapshots, source };
}

test("the current objects are sorted once per revision and the snapshot is kept for the later pages", () => {
  const { state, snapshots, source } = setUp();
  const first = source.current();
  expect(first.keys).toEqual(["a", "b", "c"]);
  state.objects = ["z"];
  expect(source.current()).toBe(first);
  state.revision = 2;
  expect(source.current().keys).toEqual(["z"]);
  expect(source.at(1)).toBe(first);
  expect(snapshots.size()).toBe(2);
});

test("a snapshot unused for longer than the TTL is dropped, and an unknown revision is read from history only", async () => {
  const { clock, source, snapshots } = setUp((revision) => (revision === 9 ? ["y", "x"] : undefined));
  source.current();
  await clock.advance(SNAPSHOT_TTL_MS + 1);
  expect(source.at(1)).toBeUndefined();
  expect(snapshots.size()).toBe(0);
  expect(source.at(9)?.keys).toEqual(["x", "y"]);
  expect(source.at(8)).toBeUndefined();
});

test("at most MAX_SNAPSHOTS are kept, the least recently used going first", async () => {
  const { clock, state, source, snapshots } = setUp();
  for (let revision = 1; revision <= MAX_SNAPSHOTS + 1; revision++) {
    state.revision = revision;
    source.current();
    if (revision === 1) await clock.advance(1);
    await clock.advance(1);
    if (revision === 2) source.at(1);
  }
  expect(snapshots.size()).toBe(MAX_SNAPSHOTS);
  expect(source.at(1)).toBeDefined();
  expect(source.at(2)).toBeUndefined();
});

test("unless the revision names the contents, each first page reads the objects anew and later pages read that", () => {
  const { state, source } = setUp(undefined, false);
  expect(source.current().keys).toEqual(["a", "b", "c"]);
  state.objects = ["z"];
  expect(source.current().keys).toEqual(["z"]);
  expect(source.at(1)?.keys).toEqual(["z"]);
});
