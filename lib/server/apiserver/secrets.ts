// core/v1 Secrets the sources provide, served as ConfigMaps are (configmaps.ts) and printed with kube-apiserver's
// columns (NAME TYPE DATA AGE). Who may read their data is the authorizer's call on resource "secrets", as the API
// server's: the request attributes name the resource, so a caller allowed configmaps is not allowed secrets.
import type { Hono } from "hono";
import type { ServedGroupVersion } from "./api-resource.ts";
import {
  CONFIGMAP_PRINTER,
  CONFIGMAP_RESOURCE,
  createConfigRoutes,
  type ConfigRoutesDeps,
  type ServedConfig,
} from "./configmaps.ts";
import { age, type Printer, AGE_COLUMN, NAME_COLUMN } from "./table-print.ts";

/** What discovery lists for the ConfigMaps and Secrets served here. */
export const CONFIG_RESOURCES: ServedGroupVersion = {
  groupVersion: "v1",
  resources: [
    CONFIGMAP_RESOURCE,
    {
      name: "secrets",
      singularName: "secret",
      namespaced: true,
      kind: "Secret",
      verbs: ["create", "delete", "get", "list", "patch", "update"],
    },
  ],
};

export const SECRET_PRINTER: Printer<ServedConfig> = {
  columns: [
    NAME_COLUMN,
    { name: "Type", type: "string", description: "Used to facilitate programmatic handling of secret data." },
    { name: "Data", type: "string", description: "Data contains the secret data." },
    AGE_COLUMN,
  ],
  cells: (secret, now) => [
    secret.metadata.name,
    (secret.type as string | undefined) ?? "Opaque",
    Object.keys((secret.data as object | undefined) ?? {}).length,
    age(secret.metadata.creationTimestamp, now),
  ],
};

/** The routes of ConfigMaps and Secrets. */
export function createConfigObjectRoutes(deps: ConfigRoutesDeps): Hono[] {
  return [
    createConfigRoutes({ kind: "ConfigMap", resource: "configmaps", printer: CONFIGMAP_PRINTER }, deps),
    createConfigRoutes({ kind: "Secret", resource: "secrets", printer: SECRET_PRINTER }, deps),
  ];
}
