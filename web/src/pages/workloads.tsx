// Workloads: Deployments, StatefulSets, DaemonSets, Jobs and CronJobs in the chosen namespace,
// with rollout progress, and scale / restart / delete where RBAC allows.
import { type ResourceRef, RES } from "../api";
import { Actions } from "../components/actions";
import { Bar } from "../components/bar";
import { age, ageSeconds, Loading } from "../components/misc";
import { type Column, Table } from "../components/table";
import { images, progress } from "../k8s/workloads";
import { href } from "../router";
import type { PageProps } from "../routes";
import { namespace, useValue } from "../state";
import { type Obj, objKey, useList } from "../store";
import { nsPath } from "./nspath";

interface Kind {
  kind: string;
  title: string;
  res: ResourceRef;
  scale?: boolean;
  restart?: boolean;
  columns: Column<Obj>[];
}

// the kinds with a page of their own (rollout and history)
const DETAIL: Record<string, string> = {
  Deployment: "/deployments/:namespace/:name", StatefulSet: "/statefulsets/:namespace/:name",
  DaemonSet: "/daemonsets/:namespace/:name", CronJob: "/cronjobs/:namespace/:name",
};

const nameCol = (kind: string): Column<Obj> => ({
  id: "name", title: "Name", value: (o) => o.metadata.name,
  render: (o) => DETAIL[kind]
    ? <a href={href(DETAIL[kind], { namespace: o.metadata.namespace, name: o.metadata.name })}>{o.metadata.name}</a>
    : o.metadata.name,
});
const nsCol: Column<Obj> = { id: "namespace", title: "Namespace", value: (o) => o.metadata.namespace };
const ageCol: Column<Obj> = { id: "age", title: "Age", value: (o) => ageSeconds(o.metadata.creationTimestamp),
  render: (o) => age(o.metadata.creationTimestamp), numeric: true };
const progressCol = (kind: string): Column<Obj> => ({
  id: "progress", title: "Rollout", value: (o) => progress(kind, o).done,
  render: (o) => {
    const p = progress(kind, o);
    return <div class="progress"><Bar label={`Rollout of ${kind} ${o.metadata.name}`} used={p.done} total={p.total}
      text={p.text} progress /></div>;
  },
});

const KINDS: Kind[] = [
  { kind: "Deployment", title: "Deployments", res: RES.deployments, scale: true, restart: true, columns: [
    { id: "replicas", title: "Replicas", value: (o) => o.spec?.replicas ?? 1, numeric: true },
    { id: "images", title: "Images", value: (o) => images(o.spec?.template) },
  ] },
  { kind: "StatefulSet", title: "StatefulSets", res: RES.statefulsets, scale: true, restart: true, columns: [
    { id: "replicas", title: "Replicas", value: (o) => o.spec?.replicas ?? 1, numeric: true },
    { id: "images", title: "Images", value: (o) => images(o.spec?.template) },
  ] },
  { kind: "DaemonSet", title: "DaemonSets", res: RES.daemonsets, restart: true, columns: [
    { id: "images", title: "Images", value: (o) => images(o.spec?.template) },
  ] },
  { kind: "Job", title: "Jobs", res: RES.jobs, columns: [
    { id: "duration", title: "Duration", value: (o) => jobDuration(o) },
  ] },
  { kind: "CronJob", title: "CronJobs", res: RES.cronjobs, columns: [
    { id: "schedule", title: "Schedule", value: (o) => o.spec?.schedule || "" },
    { id: "suspend", title: "Suspended", value: (o) => (o.spec?.suspend ? "yes" : "no") },
    { id: "active", title: "Active", value: (o) => (o.status?.active || []).length, numeric: true },
    { id: "last", title: "Last schedule", value: (o) => ageSeconds(o.status?.lastScheduleTime),
      render: (o) => (o.status?.lastScheduleTime ? age(o.status.lastScheduleTime) + " ago" : "never") },
  ] },
];

function jobDuration(o: Obj): string {
  const start = o.status?.startTime;
  if (!start) return "";
  const end = o.status?.completionTime ? Date.parse(o.status.completionTime) : Date.now();
  return `${Math.round((end - Date.parse(start)) / 1000)}s`;
}

function KindTable({ k, ns }: { k: Kind; ns: string }) {
  const list = useList(nsPath(k.res, ns));
  const columns: Column<Obj>[] = [
    nameCol(k.kind),
    ...(ns ? [] : [nsCol]),
    ...(k.kind === "CronJob" ? [] : [progressCol(k.kind)]),
    ...k.columns,
    ageCol,
    { id: "actions", title: "Actions", value: () => "",
      render: (o) => <Actions res={k.res} obj={{ ...o, kind: k.kind }} canScale={k.scale} canRestart={k.restart} /> },
  ];
  return (
    <section aria-labelledby={`h-${k.kind}`}>
      <h2 id={`h-${k.kind}`}>{k.title} ({list.items.length})</h2>
      <Loading loaded={list.loaded} error={list.error} />
      <Table label={k.title} rows={list.items} rowKey={objKey} columns={columns} empty={`No ${k.title}.`} />
    </section>
  );
}

export function Workloads(_: PageProps) {
  const ns = useValue(namespace);
  return (
    <div>
      <h1>Workloads{ns ? ` in ${ns}` : ""}</h1>
      {KINDS.map((k) => <KindTable key={k.kind} k={k} ns={ns} />)}
    </div>
  );
}
