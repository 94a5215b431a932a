// An object's YAML, and editing it: edit -> server-side dry run (dryRun=All: admission and
// validation run, nothing is stored) -> the diff of what would change -> apply.
import { createTwoFilesPatch } from "diff";
import { useEffect, useState } from "preact/hooks";
import { parse, stringify } from "yaml";
import { ApiError, call, type ResourceRef, resourcePath } from "../api";
import { toast, toastError } from "../components/toast";
import { useCan } from "../rbac";
import type { PageProps } from "../routes";
import type { Obj } from "../store";

// what the editor hides: the server's bookkeeping, noise in a diff
function forEditing(o: Obj): Obj {
  const copy = structuredClone(o);
  if (copy.metadata) delete copy.metadata.managedFields;
  return copy;
}

const toYaml = (o: Obj) => stringify(forEditing(o), { lineWidth: 0 });

export function YamlPage({ params }: PageProps) {
  const res: ResourceRef = { group: params.group === "_" ? "" : params.group, version: params.version,
    resource: params.resource, namespace: params.namespace === "_" ? undefined : params.namespace, name: params.name };
  const path = resourcePath(res);
  const [obj, setObj] = useState<Obj | null>(null);
  const [error, setError] = useState("");
  const [text, setText] = useState("");
  const [diff, setDiff] = useState<string | null>(null);
  const [pending, setPending] = useState<Obj | null>(null);
  const mayUpdate = useCan({ verb: "update", group: res.group, resource: res.resource, namespace: res.namespace,
    name: res.name });

  const load = async () => {
    try {
      const o = await call("GET", path);
      setObj(o);
      setText(toYaml(o));
      setDiff(null);
      setPending(null);
      setError("");
    } catch (e) {
      setError(e instanceof Error ? e.message : String(e));
    }
  };
  useEffect(() => {
    void load();
  }, [path]);

  const review = async () => {
    let edited: Obj;
    try {
      edited = parse(text);
    } catch (e) {
      toast(`Not valid YAML: ${e instanceof Error ? e.message : e}`, true);
      return;
    }
    try {
      const result = await call("PUT", path, { body: edited, query: { dryRun: "All", fieldManager: "pyk8s-dashboard" } });
      setDiff(createTwoFilesPatch(`${res.name} (stored)`, `${res.name} (after apply)`, toYaml(obj!), toYaml(result),
        "", "", { context: 3 }));
      setPending(edited);
    } catch (e) {
      toastError(e);
    }
  };

  const apply = async () => {
    try {
      await call("PUT", path, { body: pending, query: { fieldManager: "pyk8s-dashboard" } });
      toast(`${obj?.kind} ${res.name} updated`);
      await load();
    } catch (e) {
      if (e instanceof ApiError && e.code === 409) toast(`${e.message} (reload to edit the current version)`, true);
      else toastError(e);
    }
  };

  if (error) return <div><h1>{res.resource}/{res.name}</h1><p class="error-text" role="alert">{error}</p></div>;
  if (!obj) return <p class="muted">Loading…</p>;
  return (
    <div>
      <h1>{obj.kind} {res.namespace ? `${res.namespace}/` : ""}{res.name}</h1>
      <label for="yaml-text">{mayUpdate ? "YAML (edit, then review the changes)" : "YAML (read only)"}</label>
      <textarea id="yaml-text" class="code" spellcheck={false} readOnly={!mayUpdate} value={text}
        onInput={(e) => {
          setText((e.target as HTMLTextAreaElement).value);
          setDiff(null);
          setPending(null);
        }} />
      <div class="toolbar">
        <button type="button" onClick={load}>Reload</button>
        {mayUpdate && <button type="button" class="primary" id="yaml-review" onClick={review}>Review changes (dry run)</button>}
      </div>
      {diff !== null && (
        <section aria-labelledby="diff-title">
          <h2 id="diff-title">Changes the API server would make</h2>
          <pre class="diff" id="yaml-diff">{diff.split("\n").slice(4).map((l, i) => (
            <span key={i} class={l.startsWith("+") ? "add" : l.startsWith("-") ? "del" : undefined}>{l + "\n"}</span>
          ))}</pre>
          <button type="button" class="primary" id="yaml-apply" onClick={apply}>Apply</button>
        </section>
      )}
    </div>
  );
}
