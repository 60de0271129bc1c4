import { expect, test } from "bun:test";
import { FakeClock } from "../../testing/fake-clock.ts";
import { requestAttributes } from "./request-attributes.ts";
import {
  createWebhookAuthorizer,
  SUBJECT_ACCESS_REVIEW_PATH,
  subjectAccessReviewSpec,
} from "./subject-access-review.ts";

const alice = { name: "alice", uid: "1", groups: ["ops", "system:authenticated"] };

test("the review carries the resource attributes, the user, the uid and the groups as upstream sends them", () => {
  expect(subjectAccessReviewSpec(requestAttributes(alice, "POST", "/run/default/web/app", "node-a")[0]!)).toEqual({
    resourceAttributes: {
      namespace: "",
      verb: "create",
      group: "",
      version: "v1",
      resource: "nodes",
      subresource: "proxy",
      name: "node-a",
    },
    user: "alice",
    groups: ["ops", "system:authenticated"],
    uid: "1",
  });
});

test("allowed, denied and neither map to allow, deny and no-opinion; each is cached for its own TTL", async () => {
  const clock = new FakeClock();
  const answers = [{ allowed: true }, { denied: true, reason: "no" }, {}];
  const posted: string[] = [];
  const authorizer = createWebhookAuthorizer(
    { cacheAuthorizedTtlMs: 1000, cacheUnauthorizedTtlMs: 10 },
    {
      clock,
      client: {
        server: "https://x",
        post: async (path, body) => {
          posted.push(path);
          expect(body).toMatchObject({ apiVersion: "authorization.k8s.io/v1", kind: "SubjectAccessReview" });
          return { status: answers.shift() };
        },
      },
    },
  );
  const [metrics] = requestAttributes(alice, "GET", "/metrics", "n");
  const [stats] = requestAttributes(alice, "GET", "/stats/summary", "n");
  const [spec] = requestAttributes(alice, "GET", "/spec/", "n");
  expect((await authorizer.authorize(metrics!)).decision).toBe("allow");
  expect(await authorizer.authorize(stats!)).toEqual({ decision: "deny", reason: "no" });
  expect((await authorizer.authorize(spec!)).decision).toBe("no-opinion");
  await clock.advance(10);
  answers.push({ allowed: true });
  expect((await authorizer.authorize(metrics!)).decision).toBe("allow");
  expect((await authorizer.authorize(stats!)).decision).toBe("allow");
  expect(posted).toEqual(Array(4).fill(SUBJECT_ACCESS_REVIEW_PATH));
});
