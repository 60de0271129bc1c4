import { expect, test } from "bun:test";
import { FakeClock } from "../../testing/fake-clock.ts";
import { createTokenReviewer, TOKEN_REVIEW_PATH } from "./token-review.ts";

test("an authenticated review gives the user with system:authenticated; a failed call is not cached", async () => {
  const clock = new FakeClock();
  let down = true;
  const bodies: unknown[] = [];
  const review = createTokenReviewer(
    { cacheTtlMs: 1000 },
    {
      clock,
      client: {
        server: "https://x",
        post: async (path, body) => {
          expect(path).toBe(TOKEN_REVIEW_PATH);
          bodies.push(body);
          if (down) throw new Error("refused");
          return {
            status: { authenticated: true, user: { username: "u", uid: "9", groups: ["g"], extra: { a: ["b"] } } },
          };
        },
      },
    },
  );
  await expect(review("tok")).rejects.toThrow("refused");
  down = false;
  const user = { name: "u", uid: "9", groups: ["g", "system:authenticated"], extra: { a: ["b"] } };
  expect(await review("tok")).toEqual(user);
  down = true;
  expect(await review("tok")).toEqual(user);
  expect(bodies).toEqual(
    Array(2).fill({ apiVersion: "authentication.k8s.io/v1", kind: "TokenReview", spec: { token: "tok" } }),
  );
});
