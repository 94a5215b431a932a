// One StatefulSet or DaemonSet (its rollout and revision history: the ControllerRevisions it owns,
// as `kubectl rollout history` lists them, with the pods at each revision), or one CronJob (its
// schedule and job history: the Jobs it owns).
import { type ResourceRef, RES, resourcePath } from "../api";
import { Actions } from "../components/actions";
import { age, ageSeconds, Badge, Loading, yamlHref } from "../components/misc";
import { Table } from "../components/table";
import { images, progress } from "../k8s/workloads";
import { navigate } from "../router";
import type { PageProps } from "../routes";
import { type Obj, objKey, useList } from "../store";

const HASH_LABEL = "controller-revision-hash";
const CHANGE_CAUSE = "kubernetes.io/change-cause";

function owned(uid: string | undefined, items: Obj[]): Obj[] {
  return items.filter((o) => (o.metadata?.ownerReferences || []).some((r: Obj) => r.uid === uid && r.controller));
}

function selectorQuery(sel: Obj | undefined): string {
  const labels = Object.entries(sel?.matchLabels || {}).map(([k, v]) => `${k}=${v}`);
  return labels.length ? `?labelSelector=${encodeURIComponent(labels.join(","))}` : "";
}

function useOne(res: ResourceRef, namespace: string, name: string) {
  return useList(resourcePath({ ...res, namespace }) + `?fieldSelector=metadata.name%3D${encodeURIComponent(name)}`);
}

function NotFound({ title, state }: { title: string; state: { loaded: boolean; error: { message: string } | null } }) {
  return <div><h1>{title}</h1><Loading loaded={state.loaded} error={state.error} />
    {state.loaded && !state.error && <p>Not found.</p>}</div>;
}

function Conditions({ o }: { o: Obj }) {
  const conds = o.status?.conditions || [];
  return conds.length ? <>{conds.map((c: Obj) => (
    <Badge key={c.type} ok={c.status === "True"} title={c.message}>{c.type}{c.reason ? `: ${c.reason}` : ""}</Badge>))}</>
    : <span class="muted">none</span>;
}

// ---- StatefulSet and DaemonSet ----------------------------------------------------------------

function revisionHistory(kind: string, o: Obj, revisions: Obj[], pods: Obj[]) {
  const history = owned(o.metadata?.uid, revisions).sort((a, b) => (b.revision || 0) - (a.revision || 0));
  // StatefulSets name their revisions in status; a DaemonSet's newest revision is its template's
  const update = kind === "StatefulSet" ? o.status?.updateRevision : history[0]?.metadata?.name;
  const current = kind === "StatefulSet" ? o.status?.currentRevision : update;
  // a StatefulSet's pods carry their revision's name in the hash label, a DaemonSet's the hash its
  // revision carries in the same label
  const podsAt = (cr: Obj) => {
    const tags = [cr.metadata?.name, cr.metadata?.labels?.[HASH_LABEL]].filter(Boolean);
    return pods.filter((p) => tags.includes(p.metadata?.labels?.[HASH_LABEL]) && !p.metadata?.deletionTimestamp);
  };
  return (
    <Table label="Revisions" rows={history} rowKey={objKey} initialSort="revision" descending
      empty="No revisions yet." columns={[
        { id: "revision", title: "Revision", value: (cr) => cr.revision || 0, numeric: true },
        { id: "name", title: "ControllerRevision", value: (cr) => cr.metadata.name,
          render: (cr) => <>{cr.metadata.name}{" "}
            {cr.metadata.name === update && <Badge ok={true}>{update === current ? "current" : "update"}</Badge>}
            {cr.metadata.name === current && current !== update && <Badge ok={null}>current</Badge>}</> },
        { id: "images", title: "Images", value: (cr) => images(cr.data?.spec?.template) },
        { id: "pods", title: "Pods (ready)", value: (cr) => podsAt(cr).length, numeric: true,
          render: (cr) => {
            const at = podsAt(cr);
            const ready = at.filter((p) => (p.status?.conditions || []).some((c: Obj) => c.type === "Ready" && c.status === "True"));
            return `${at.length} (${ready.length})`;
          } },
        { id: "cause", title: "Change cause", value: (cr) => cr.metadata?.annotations?.[CHANGE_CAUSE] || "" },
        { id: "age", title: "Age", value: (cr) => ageSeconds(cr.metadata.creationTimestamp),
          render: (cr) => age(cr.metadata.creationTimestamp), numeric: true },
      ]} />
  );
}

function RevisionedPage({ kind, res, params }: { kind: "StatefulSet" | "DaemonSet"; res: ResourceRef; params: Record<string, string> }) {
  const { namespace, name } = params;
  const one = useOne(res, namespace, name);
  const o = one.items[0];
  const revisions = useList(o ? resourcePath({ ...RES.controllerrevisions, namespace }) : null);
  const pods = useList(o ? resourcePath({ ...RES.pods, namespace }) + selectorQuery(o.spec?.selector) : null);
  if (!o) return <NotFound title={`${kind} ${name}`} state={one} />;
  const strategy = o.spec?.updateStrategy?.type || "RollingUpdate";
  return (
    <div>
      <h1>{kind} {namespace}/{name}</h1>
      <Actions res={res} obj={{ ...o, kind }} canScale={kind === "StatefulSet"} canRestart after={() => navigate("/workloads")} />
      <dl class="meta">
        <dt>Rollout</dt><dd>{progress(kind, o).text}</dd>
        <dt>Update strategy</dt><dd>{strategy}{o.spec?.updateStrategy?.rollingUpdate?.partition
          ? ` (partition ${o.spec.updateStrategy.rollingUpdate.partition})` : ""}</dd>
        <dt>Images</dt><dd>{images(o.spec?.template)}</dd>
        <dt>Conditions</dt><dd><Conditions o={o} /></dd>
      </dl>
      <h2>Revision history</h2>
      <Loading loaded={revisions.loaded} error={revisions.error} />
      {revisionHistory(kind, o, revisions.items, pods.items)}
    </div>
  );
}

export function StatefulSetPage({ params }: PageProps) {
  return <RevisionedPage kind="StatefulSet" res={RES.statefulsets} params={params} />;
}

export function DaemonSetPage({ params }: PageProps) {
  return <RevisionedPage kind="DaemonSet" res={RES.daemonsets} params={params} />;
}

// ---- CronJob ----------------------------------------------------------------------------------

function jobState(j: Obj): { text: string; ok: boolean | null } {
  const conds: Obj[] = j.status?.conditions || [];
  const has = (t: string) => conds.some((c) => c.type === t && c.status === "True");
  if (has("Complete")) return { text: "Complete", ok: true };
  if (has("Failed")) return { text: "Failed", ok: false };
  if (has("Suspended")) return { text: "Suspended", ok: null };
  return { text: j.status?.active ? "Running" : "Pending", ok: null };
}

function duration(j: Obj): number {
  const start = j.status?.startTime;
  if (!start) return 0;
  const end = j.status?.completionTime ? Date.parse(j.status.completionTime) : Date.now();
  return Math.round((end - Date.parse(start)) / 1000);
}

export function CronJobPage({ params }: PageProps) {
  const { namespace, name } = params;
  const one = useOne(RES.cronjobs, namespace, name);
  const o = one.items[0];
  const jobs = useList(o ? resourcePath({ ...RES.jobs, namespace }) : null);
  if (!o) return <NotFound title={`CronJob ${name}`} state={one} />;
  const history = owned(o.metadata?.uid, jobs.items);
  const s = o.spec || {};
  return (
    <div>
      <h1>CronJob {namespace}/{name}</h1>
      <Actions res={RES.cronjobs} obj={{ ...o, kind: "CronJob" }} after={() => navigate("/workloads")} />
      <dl class="meta">
        <dt>Schedule</dt><dd>{s.schedule}{s.timeZone ? ` (${s.timeZone})` : ""}{s.suspend ? " — suspended" : ""}</dd>
        <dt>Concurrency policy</dt><dd>{s.concurrencyPolicy || "Allow"}</dd>
        <dt>History kept</dt><dd>{s.successfulJobsHistoryLimit ?? 3} succeeded, {s.failedJobsHistoryLimit ?? 1} failed</dd>
        <dt>Last schedule</dt><dd>{o.status?.lastScheduleTime ? `${age(o.status.lastScheduleTime)} ago` : "never"}</dd>
        <dt>Last success</dt><dd>{o.status?.lastSuccessfulTime ? `${age(o.status.lastSuccessfulTime)} ago` : "never"}</dd>
        <dt>Images</dt><dd>{images(s.jobTemplate?.spec?.template)}</dd>
      </dl>
      <h2>Job history</h2>
      <Loading loaded={jobs.loaded} error={jobs.error} />
      <Table label="Jobs" rows={history} rowKey={objKey} initialSort="age" empty="No jobs yet." columns={[
        { id: "name", title: "Job", value: (j) => j.metadata.name,
          render: (j) => { const y = yamlHref({ ...j, kind: "Job" }); return y ? <a href={y}>{j.metadata.name}</a> : j.metadata.name; } },
        { id: "state", title: "Status", value: (j) => jobState(j).text,
          render: (j) => { const st = jobState(j); return <Badge ok={st.ok}>{st.text}</Badge>; } },
        { id: "completions", title: "Completions", value: (j) => progress("Job", j).text },
        { id: "duration", title: "Duration", value: duration, render: (j) => (j.status?.startTime ? `${duration(j)}s` : ""),
          numeric: true },
        { id: "age", title: "Age", value: (j) => ageSeconds(j.metadata.creationTimestamp),
          render: (j) => age(j.metadata.creationTimestamp), numeric: true },
      ]} />
    </div>
  );
}
