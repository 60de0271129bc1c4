import { expect, test } from "bun:test";
import { DEFAULT_CONFIG } from "../../config/config-types.ts";
import { FakeClock } from "../../testing/fake-clock.ts";
import { ANONYMOUS } from "../authorizer.ts";
import { requestAttributes } from "./request-attributes.ts";
import { createAuthorizer } from "./authorizers.ts";

const [run] = requestAttributes(ANONYMOUS, "POST", "/run/a/b/c", "n");

test("AlwaysAllow allows every attribute set", async () => {
  const authorizer = await createAuthorizer(DEFAULT_CONFIG, { clock: new FakeClock() });
  expect(await authorizer.authorize(run!)).toEqual({ decision: "allow", reason: "" });
});

test("Webhook without a client and RBAC without a policy file are refused, naming what is missing", async () => {
  const clock = new FakeClock();
  await expect(createAuthorizer({ ...DEFAULT_CONFIG, authorizationMode: "Webhook" }, { clock })).rejects.toThrow(
    "authorization.mode Webhook needs --kubeconfig",
  );
  await expect(createAuthorizer({ ...DEFAULT_CONFIG, authorizationMode: "RBAC" }, { clock })).rejects.toThrow(
    "authorization.mode RBAC needs --authorization_policy_file",
  );
});

test("RBAC mode hands the policy file to rbac's factory", async () => {
  const files: string[] = [];
  const authorizer = await createAuthorizer(
    { ...DEFAULT_CONFIG, authorizationMode: "RBAC", authorizationPolicyFile: "/p.yaml" },
    {
      clock: new FakeClock(),
      rbac: async ({ file }) => {
        files.push(file);
        return { authorize: async () => ({ decision: "deny", reason: "policy" }), stop() {} };
      },
    },
  );
  expect(await authorizer.authorize(run!)).toEqual({ decision: "deny", reason: "policy" });
  expect(files).toEqual(["/p.yaml"]);
});
