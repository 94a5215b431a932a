// HorizontalPodAutoscalers in the chosen namespace: target, replicas, each metric's current value
// against its target, conditions, recent events, and a chart per HPA of its metrics and replicas
// over time. The samples come from the HPA's watch (one per status change; no polling); where the
// user may read metrics.k8s.io, each sample also gets the target's pods' mean cpu usage, read once
// per status change. The history lives in this browser tab's session storage.
import "./resources.css";
import { useEffect, useState } from "preact/hooks";
import { get, KIND_RESOURCES, RES, resourcePath } from "../api";
import { Actions } from "../components/actions";
import { LineChart, type RefLine, type Series } from "../components/linechart";
import { age, ageSeconds, Badge, Loading } from "../components/misc";
import { type Column, Table } from "../components/table";
import { lastSeen as evTime } from "../k8s/events";
import { addUsage, formatValue, hpaRef, readings, record, samples } from "../k8s/hpa";
import { formatCPU, parseQuantity } from "../k8s/quantity";
import { AUTOSCALING } from "../k8s/resources";
import { useCan } from "../rbac";
import { href } from "../router";
import type { PageProps } from "../routes";
import { namespace, useValue } from "../state";
import { type Obj, objKey, useList } from "../store";
import { nsPath } from "./nspath";

// the scale target's pods' mean cpu usage in cores, from metrics.k8s.io (the selector from /scale)
async function podUsage(hpa: Obj): Promise<number | null> {
  const ref = hpa.spec?.scaleTargetRef || {};
  const res = KIND_RESOURCES[ref.kind];
  if (!res) return null;
  const ns = hpa.metadata.namespace;
  const scale = await get(resourcePath({ ...res, namespace: ns, name: ref.name, subresource: "scale" }));
  const selector = scale.status?.selector;
  if (!selector) return null;
  const metrics = await get(resourcePath({ ...AUTOSCALING.podmetrics, namespace: ns }), { query: { labelSelector: selector } });
  const pods: Obj[] = metrics.items || [];
  if (!pods.length) return null;
  const total = pods.reduce((n, p) => n + (p.containers || []).reduce((m: number, c: Obj) =>
    m + parseQuantity(c.usage?.cpu), 0), 0);
  return total / pods.length;
}

function condition(c: Obj) {
  // ScalingLimited=True means a limit holds the count: worth a look, not an error
  const ok = c.type === "ScalingLimited" ? (c.status === "False" ? true : null) : c.status === "True";
  return <Badge ok={ok}>{c.type}={c.status}</Badge>;
}

function HpaCharts({ hpa, history, now }: { hpa: Obj; history: ReturnType<typeof samples>; now: number }) {
  const r = readings(hpa);
  const name = hpa.metadata.name;
  const charts = r.map((m, i) => {
    const series: Series[] = [{ name: `current ${m.name}`, cls: "s-metric",
      points: history.filter((s) => s.values[i] !== null && s.values[i] !== undefined).map((s) => [s.t, s.values[i] as number]) }];
    const refs: RefLine[] = m.target !== null ? [{ value: m.target, label: "target", cls: "r-target" }] : [];
    return <LineChart key={i} label={`${m.name} of ${name}`} series={series} refs={refs} until={now}
      format={(v) => formatValue(v, m.unit)} />;
  });
  const usage = history.filter((s) => s.usage !== undefined);
  return (
    <div class="charts">
      {charts}
      <LineChart label={`Replicas of ${name}`} until={now} format={(v) => String(Math.round(v))}
        series={[{ name: "current", cls: "s-replicas", step: true, points: history.map((s) => [s.t, s.replicas]) },
          { name: "desired", cls: "s-desired", step: true, points: history.map((s) => [s.t, s.desired]) }]}
        refs={[{ value: hpa.spec?.minReplicas ?? 1, label: "min", cls: "r-limit" },
          { value: hpa.spec?.maxReplicas ?? 1, label: "max", cls: "r-limit" }]} />
      {usage.length > 0 && <LineChart label={`Pods' mean cpu usage of ${name} (metrics.k8s.io)`} until={now}
        format={formatCPU} series={[{ name: "cpu usage", cls: "s-usage", points: usage.map((s) => [s.t, s.usage as number]) }]} />}
    </div>
  );
}

function HpaCard({ hpa, events, now, mayMetrics }: { hpa: Obj; events: Obj[]; now: number; mayMetrics: boolean }) {
  const { name, namespace: ns, uid, resourceVersion } = hpa.metadata;
  const history = samples(uid);
  // the pods' usage of this status change, read once (metrics.k8s.io has no watch)
  const [, setUsageTick] = useState(0);
  useEffect(() => {
    if (!mayMetrics) return;
    let live = true;
    podUsage(hpa).then((u) => {
      if (u !== null && live) {
        addUsage(uid, resourceVersion, u);
        setUsageTick((t) => t + 1);
      }
    }, () => undefined); // no scale or no metrics yet: the chart goes without
    return () => {
      live = false;
    };
  }, [uid, resourceVersion, mayMetrics]);
  const mine = events.filter((e) => e.involvedObject?.name === name && (!e.involvedObject?.uid || e.involvedObject.uid === uid))
    .sort((a, b) => ageSeconds(evTime(a)) - ageSeconds(evTime(b))).slice(0, 8);
  const ref = hpa.spec?.scaleTargetRef || {};
  const s = hpa.status || {};
  return (
    <article class="hpa-card" aria-labelledby={`hpa-${uid}`} data-key={objKey(hpa)}>
      <h2 id={`hpa-${uid}`} tabIndex={-1}>{name} <span class="muted">→ {ref.kind === "Deployment"
        ? <a href={href("/deployments/:namespace/:name", { namespace: ns, name: ref.name })}>{hpaRef(hpa)}</a>
        : hpaRef(hpa)}</span></h2>
      <dl class="meta">
        <dt>Replicas</dt>
        <dd class="replicas">{s.currentReplicas ?? 0} current, {s.desiredReplicas ?? 0} desired (min {hpa.spec?.minReplicas ?? 1},
          max {hpa.spec?.maxReplicas})</dd>
        <dt>Metrics</dt>
        <dd class="targets">{readings(hpa).map((m) => <code key={m.text}>{m.text}</code>)}</dd>
        <dt>Last scaled</dt>
        <dd>{s.lastScaleTime ? `${age(s.lastScaleTime)} ago` : "never"}</dd>
      </dl>
      <HpaCharts hpa={hpa} history={history} now={now} />
      <p class="muted history-note" data-samples={history.length}>
        {history.length} sample{history.length === 1 ? "" : "s"}, one per status change seen while this page was open;
        kept in this browser tab until it is closed.
      </p>
      <h3>Conditions</h3>
      <Table<Obj> label={`Conditions of ${name}`} rows={s.conditions || []} rowKey={(c) => c.type} columns={[
        { id: "type", title: "Condition", value: (c) => c.type, render: condition },
        { id: "reason", title: "Reason", value: (c) => c.reason || "" },
        { id: "message", title: "Message", value: (c) => c.message || "" },
        { id: "since", title: "Since", value: (c) => ageSeconds(c.lastTransitionTime),
          render: (c) => age(c.lastTransitionTime), numeric: true },
      ]} empty="No conditions yet." />
      <h3>Recent events</h3>
      <Table label={`Events of ${name}`} rows={mine} rowKey={objKey} initialSort="age" empty="No events." columns={[
        { id: "age", title: "Age", value: (e) => ageSeconds(evTime(e)), render: (e) => age(evTime(e)), numeric: true },
        { id: "type", title: "Type", value: (e) => e.type },
        { id: "reason", title: "Reason", value: (e) => e.reason },
        { id: "count", title: "Count", value: (e) => e.count || 1, numeric: true },
        { id: "message", title: "Message", value: (e) => e.message || "" },
      ]} />
    </article>
  );
}

export function Hpas(_: PageProps) {
  const ns = useValue(namespace);
  const hpas = useList(nsPath(AUTOSCALING.hpas, ns));
  const events = useList(nsPath(RES.events, ns, "?fieldSelector=involvedObject.kind%3DHorizontalPodAutoscaler"));
  const mayMetrics = useCan({ verb: "list", group: "metrics.k8s.io", resource: "pods", namespace: ns || undefined });
  // every status change the watch brings is a sample (record() skips versions already kept)
  for (const h of hpas.items) record(h);
  const now = Date.now();
  const columns: Column<Obj>[] = [
    { id: "name", title: "Name", value: (o) => o.metadata.name, render: (o) => <a href={`#hpa-${o.metadata.uid}`}
      onClick={(e) => {
        e.preventDefault();
        // to the HPA's card, focus included (a keyboard user goes on from there)
        const h = document.getElementById(`hpa-${o.metadata.uid}`);
        h?.scrollIntoView();
        h?.focus();
      }}>{o.metadata.name}</a> },
    ...(ns ? [] : [{ id: "namespace", title: "Namespace", value: (o: Obj) => o.metadata.namespace }]),
    { id: "reference", title: "Reference", value: hpaRef },
    { id: "targets", title: "Targets", value: (o) => readings(o).map((m) => m.text).join(", ") },
    { id: "min", title: "Min", value: (o) => o.spec?.minReplicas ?? 1, numeric: true },
    { id: "max", title: "Max", value: (o) => o.spec?.maxReplicas ?? 0, numeric: true },
    { id: "replicas", title: "Replicas", value: (o) => o.status?.currentReplicas ?? 0, numeric: true },
    { id: "desired", title: "Desired", value: (o) => o.status?.desiredReplicas ?? 0, numeric: true },
    { id: "age", title: "Age", value: (o) => ageSeconds(o.metadata.creationTimestamp),
      render: (o) => age(o.metadata.creationTimestamp), numeric: true },
    { id: "actions", title: "Actions", value: () => "",
      render: (o) => <Actions res={AUTOSCALING.hpas} obj={{ ...o, kind: "HorizontalPodAutoscaler" }} /> },
  ];
  const sorted = hpas.items.slice().sort((a, b) => objKey(a).localeCompare(objKey(b)));
  return (
    <div>
      <h1>HorizontalPodAutoscalers{ns ? ` in ${ns}` : ""} ({hpas.items.length})</h1>
      <Loading loaded={hpas.loaded} error={hpas.error} />
      <Table label="HorizontalPodAutoscalers" rows={hpas.items} rowKey={objKey} columns={columns} empty="No HorizontalPodAutoscalers." />
      {sorted.map((h) => <HpaCard key={objKey(h)} hpa={h} events={events.items} now={now} mayMetrics={mayMetrics} />)}
    </div>
  );
}
