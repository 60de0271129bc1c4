import { describe, expect, test } from "bun:test";
import { ANONYMOUS } from "../authorizer.ts";
import { auditUser, authenticationFailedMessage, microTime, responseStatus, sourceIPs } from "./event.ts";

describe("audit event fields", () => {
  test("timestamps are metav1.MicroTime: UTC with six fractional digits", () => {
    expect(microTime(Date.UTC(2026, 10, 28, 17, 5, 9, 42))).toBe("2026-11-28T17:05:09.042000Z");
  });

  test("the user carries username, uid and groups in authnv1.UserInfo's names; an unknown caller is the empty user", () => {
    expect(auditUser({ name: "alice", uid: "42", groups: ["ops"] })).toEqual({
      username: "alice",
      uid: "42",
      groups: ["ops"],
    });
    expect(auditUser(ANONYMOUS)).toEqual({ username: "system:anonymous", groups: ["system:unauthenticated"] });
    expect(auditUser(undefined)).toEqual({});
  });

  test("source IPs list X-Forwarded-For, then X-Real-Ip, then the peer unless it is already last", () => {
    const headers = new Headers({ "x-forwarded-for": "1.1.1.1, 2.2.2.2", "x-real-ip": "3.3.3.3" });
    expect(sourceIPs(headers, "10.0.0.1")).toEqual(["1.1.1.1", "2.2.2.2", "3.3.3.3", "10.0.0.1"]);
    expect(sourceIPs(new Headers({ "x-forwarded-for": "10.0.0.1" }), "10.0.0.1")).toEqual(["10.0.0.1"]);
    expect(sourceIPs(new Headers(), undefined)).toEqual([]);
  });

  test("a success's status is its code alone; a failure's adds the Status body's message and reason", () => {
    expect(responseStatus(200)).toEqual({ metadata: {}, code: 200 });
    expect(responseStatus(404, { message: "pod not found", reason: "NotFound" })).toEqual({
      metadata: {},
      status: "Failure",
      message: "pod not found",
      reason: "NotFound",
      code: 404,
    });
  });

  test("a failed authentication names the methods tried, as upstream's getAuthMethods", () => {
    const url = new URL("http://node/exec/a/b/c");
    expect(authenticationFailedMessage(new Headers({ authorization: "Bearer nope" }), url, false)).toBe(
      "Authentication failed, attempted: bearer",
    );
    expect(authenticationFailedMessage(new Headers(), new URL("http://n/x?access_token=t"), true)).toBe(
      "Authentication failed, attempted: access_token, x509",
    );
    expect(authenticationFailedMessage(new Headers(), url, false)).toBe(
      "Authentication failed, no credentials provided",
    );
  });
});
