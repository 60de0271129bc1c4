import { expect, test } from "bun:test";
import { fieldError } from "../../api/types.ts";
import { ANONYMOUS } from "../authorizer.ts";
import { requestAttributes } from "../authn/request-attributes.ts";
import { alreadyExists, conflict, forbidden, forbiddenRequest, invalid, isApiError, notFound } from "./api-status.ts";

test("NotFound, AlreadyExists, Conflict and Forbidden are worded as apimachinery's errors", () => {
  expect(notFound("pods", "web").status).toMatchObject({
    code: 404,
    reason: "NotFound",
    message: 'pods "web" not found',
  });
  expect(notFound("pods", "web", "metrics.k8s.io").status.message).toBe('pods.metrics.k8s.io "web" not found');
  expect(alreadyExists("pods", "web").status).toMatchObject({ code: 409, message: 'pods "web" already exists' });
  expect(conflict("pods", "web").status).toMatchObject({ code: 409, reason: "Conflict" });
  expect(forbidden("pods", "", "no").status.message).toBe("pods is forbidden: no");
  expect(isApiError(notFound("pods", "x"))).toBe(true);
  expect(isApiError(new Error("x"))).toBe(false);
});

test("Invalid names the kind and each field, in brackets when several, with causes", () => {
  const one = invalid("Pod", "web", [fieldError("spec.containers[0].image", "Required value")]).status;
  expect(one.message).toBe('Pod "web" is invalid: spec.containers[0].image: Required value');
  const two = invalid("Pod", "web", [fieldError("a", "Required value"), fieldError("b", "Invalid value", "x", "why")]);
  expect(two.status.message).toBe('Pod "web" is invalid: [a: Required value, b: Invalid value: "x": why]');
  expect(two.status.details?.causes).toEqual([
    { reason: "FieldValueRequired", message: "Required value", field: "a" },
    { reason: "FieldValueInvalid", message: 'Invalid value: "x": why', field: "b" },
  ]);
});

test("the authorizer's 403 is kube-apiserver's: verb, resource, group and namespace or cluster scope", () => {
  const base = requestAttributes({ name: "alice", groups: [] }, "GET", "/api/v1/namespaces/default/pods", "node")[0]!;
  expect(forbiddenRequest({ ...base, verb: "list" }).message).toBe(
    'pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the namespace "default"',
  );
  expect(forbiddenRequest({ ...base, verb: "create", name: "web", subresource: "exec" }).message).toBe(
    'pods "web" is forbidden: User "alice" cannot create resource "pods/exec" in API group "" in the namespace "default"',
  );
  expect(forbiddenRequest({ ...base, verb: "list", namespace: "" }).message).toEndWith("at the cluster scope");
  expect(
    forbiddenRequest({ ...base, user: ANONYMOUS, verb: "get", resourceRequest: false, path: "/api" }).message,
  ).toBe('forbidden: User "system:anonymous" cannot get path "/api"');
});
