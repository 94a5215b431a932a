// The collection path of a namespaced resource in the chosen namespace ("" = all namespaces).
import { type ResourceRef, resourcePath } from "../api";

export function nsPath(res: ResourceRef, ns: string, query = ""): string {
  return resourcePath({ ...res, namespace: ns || undefined }) + query;
}
