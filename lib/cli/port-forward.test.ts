import { describe, expect, test } from "bun:test";
import { parsePortPairs } from "./port-forward.ts";

describe("kubelet port-forward's port arguments", () => {
  test("take kubectl's forms: REMOTE, LOCAL:REMOTE and :REMOTE (a free local port)", () => {
    expect(parsePortPairs(["8080", "9000:80", ":443"])).toEqual([
      { local: 8080, remote: 8080 },
      { local: 9000, remote: 80 },
      { local: 0, remote: 443 },
    ]);
  });

  test("a port that is none, or none at all, is named with the forms to give", () => {
    expect(parsePortPairs(["http"])).toBe('invalid port "http": give REMOTE, LOCAL:REMOTE or :REMOTE');
    expect(parsePortPairs(["80:0"])).toBe('invalid port "80:0": give REMOTE, LOCAL:REMOTE or :REMOTE');
    expect(parsePortPairs(["70000"])).toBe('invalid port "70000": give REMOTE, LOCAL:REMOTE or :REMOTE');
    expect(parsePortPairs([])).toBe("give at least one port: REMOTE, LOCAL:REMOTE or :REMOTE");
  });
});
