// The fake runtime keeps the same contract as the real Docker runtime.
import { describe } from "bun:test";
import { runtimeContract } from "../container/runtime-contract.ts";
import { FakeRuntime } from "./fake-runtime.ts";

describe("FakeRuntime", () => {
  runtimeContract(() => new FakeRuntime(), { image: "local/busybox:stable", prefix: "fake-" });
});
