// What the signed-in user may do, asked of the API with SelfSubjectAccessReviews (as
// `kubectl auth can-i`), so buttons for verbs RBAC would refuse are not shown at all.
import { useEffect, useState } from "preact/hooks";
import { call } from "./api";

export interface Access {
  verb: string;
  group: string;
  resource: string;
  namespace?: string;
  subresource?: string;
  name?: string;
}

const cache = new Map<string, Promise<boolean>>();

function key(a: Access): string {
  return [a.verb, a.group, a.resource, a.subresource || "", a.namespace || "", a.name || ""].join("|");
}

export function can(a: Access): Promise<boolean> {
  const k = key(a);
  let p = cache.get(k);
  if (!p) {
    p = call("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", {
      body: {
        apiVersion: "authorization.k8s.io/v1",
        kind: "SelfSubjectAccessReview",
        spec: { resourceAttributes: { verb: a.verb, group: a.group, resource: a.resource,
          subresource: a.subresource, namespace: a.namespace, name: a.name } },
      },
    }).then((r) => Boolean(r.status?.allowed), () => false);
    cache.set(k, p);
    // permissions change (a RoleBinding added): ask again after a while
    setTimeout(() => cache.delete(k), 30_000);
  }
  return p;
}

// true once the API says yes; false while unknown or refused (no button flashes up then goes)
export function useCan(a: Access | null): boolean {
  const [ok, setOk] = useState(false);
  const k = a ? key(a) : "";
  useEffect(() => {
    let live = true;
    setOk(false);
    if (a) void can(a).then((v) => live && setOk(v));
    return () => {
      live = false;
    };
  }, [k]);
  return ok;
}
