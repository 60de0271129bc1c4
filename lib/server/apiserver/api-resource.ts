// What a served resource tells discovery (metav1.APIResource) and the group-version it belongs to: each resource
// module exports its entries, and the discovery routes list what the modules export, so discovery never names a
// resource nobody serves.

/** metav1.APIResource, as /api/v1 and /apis/{group}/{version} list it. */
export interface APIResource {
  /** Plural, with "/subresource" for a subresource: "pods", "pods/log". */
  name: string;
  singularName: string;
  namespaced: boolean;
  kind: string;
  verbs: string[];
  shortNames?: string[];
  categories?: string[];
}

/** The resources one module serves under one group-version ("v1" is the core group; else "group/version"). */
export interface ServedGroupVersion {
  groupVersion: string;
  resources: APIResource[];
}
