// Scale, restart and delete buttons for one object, each shown only when RBAC would allow it
// (SelfSubjectAccessReview), each confirmed first; the API's refusal shows as a toast.
import { call, type ResourceRef, resourcePath } from "../api";
import { useCan } from "../rbac";
import type { Obj } from "../store";
import { confirmAction } from "./confirm";
import { yamlHref } from "./misc";
import { toast, toastError } from "./toast";

// as `kubectl rollout restart`: a changed pod-template annotation makes the controller roll out
export const RESTARTED_AT = "kubectl.kubernetes.io/restartedAt";

function rfc3339(d: Date): string {
  return d.toISOString().replace(/\.\d{3}Z$/, "Z");
}

export async function scale(res: ResourceRef, o: Obj): Promise<void> {
  let replicas = o.spec?.replicas ?? 1;
  const ok = await confirmAction(`Scale ${o.kind} ${o.metadata.name}`, (
    <label class="field">Replicas{" "}
      <input type="number" min={0} value={replicas} id="scale-replicas" autoFocus
        onInput={(e) => (replicas = Number((e.target as HTMLInputElement).value))} />
    </label>
  ), "Scale");
  if (!ok) return;
  try {
    await call("PATCH", resourcePath({ ...res, namespace: o.metadata.namespace, name: o.metadata.name,
      subresource: "scale" }), { body: { spec: { replicas } }, contentType: "application/merge-patch+json" });
    toast(`${o.kind} ${o.metadata.name} scaled to ${replicas}`);
  } catch (e) {
    toastError(e);
  }
}

export async function restart(res: ResourceRef, o: Obj): Promise<void> {
  if (!await confirmAction(`Restart ${o.kind} ${o.metadata.name}`,
    <p>Its pods are replaced by a rollout, as <code>kubectl rollout restart</code> does.</p>, "Restart")) return;
  try {
    await call("PATCH", resourcePath({ ...res, namespace: o.metadata.namespace, name: o.metadata.name }), {
      body: { spec: { template: { metadata: { annotations: { [RESTARTED_AT]: rfc3339(new Date()) } } } } },
      contentType: "application/strategic-merge-patch+json",
    });
    toast(`${o.kind} ${o.metadata.name} restarted`);
  } catch (e) {
    toastError(e);
  }
}

export async function remove(res: ResourceRef, o: Obj, after?: () => void): Promise<void> {
  const ns = o.metadata.namespace;
  if (!await confirmAction(`Delete ${o.kind} ${o.metadata.name}?`,
    <p>{o.kind} <strong>{o.metadata.name}</strong>{ns ? ` in namespace ${ns}` : ""} will be deleted.</p>,
    "Delete", true)) return;
  try {
    await call("DELETE", resourcePath({ ...res, namespace: ns, name: o.metadata.name }),
      { query: { propagationPolicy: "Background" } });
    toast(`${o.kind} ${o.metadata.name} deleted`);
    after?.();
  } catch (e) {
    toastError(e);
  }
}

interface Props {
  res: ResourceRef;
  obj: Obj;
  canScale?: boolean;
  canRestart?: boolean;
  after?: () => void; // after a delete (a detail page goes back to its list)
}

export function Actions({ res, obj, canScale, canRestart, after }: Props) {
  const ns = obj.metadata?.namespace;
  const name = obj.metadata?.name;
  const base = { group: res.group, resource: res.resource, namespace: ns, name };
  const mayScale = useCan(canScale ? { ...base, verb: "patch", subresource: "scale" } : null);
  const mayPatch = useCan(canRestart ? { ...base, verb: "patch" } : null);
  const mayDelete = useCan({ ...base, verb: "delete" });
  const yaml = yamlHref(obj);
  const label = `${obj.kind} ${name}`;
  return (
    <div class="row-actions">
      {yaml && <a class="button-link" href={yaml} aria-label={`YAML of ${label}`}>YAML</a>}
      {mayScale && <button type="button" data-action="scale" aria-label={`Scale ${label}`}
        onClick={() => scale(res, obj)}>Scale</button>}
      {mayPatch && <button type="button" data-action="restart" aria-label={`Restart ${label}`}
        onClick={() => restart(res, obj)}>Restart</button>}
      {mayDelete && <button type="button" data-action="delete" class="danger" aria-label={`Delete ${label}`}
        onClick={() => remove(res, obj, after)}>Delete</button>}
    </div>
  );
}
