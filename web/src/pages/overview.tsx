// Cluster overview: nodes with their allocation (the sum of pod requests on each node against
// its allocatable, as the scheduler counts it), conditions and taints; namespaces; recent
// Warning events.
import { RES, resourcePath } from "../api";
import { Bar } from "../components/bar";
import { age, ageSeconds, Badge, Loading } from "../components/misc";
import { Table } from "../components/table";
import { lastSeen as eventTime } from "../k8s/events";
import { isTerminated, podRequests } from "../k8s/pods";
import { formatBytes, formatCPU, parseQuantity } from "../k8s/quantity";
import type { PageProps } from "../routes";
import { type Obj, useList } from "../store";

// resources the bars show, with how their amounts read
const RESOURCES: { name: string; title: string; fmt: (n: number) => string }[] = [
  { name: "cpu", title: "CPU", fmt: formatCPU },
  { name: "memory", title: "Memory", fmt: formatBytes },
  { name: "pods", title: "Pods", fmt: (n) => String(n) },
  { name: "nvidia.com/gpu", title: "GPUs", fmt: (n) => String(n) },
  { name: "aliyun.com/gpu-mem", title: "GPU memory", fmt: (n) => String(n) },
];

export function allocation(nodes: Obj[], pods: Obj[]): Map<string, Record<string, number>> {
  const used = new Map<string, Record<string, number>>();
  for (const n of nodes) used.set(n.metadata.name, {});
  for (const p of pods) {
    const node = p.spec?.nodeName;
    if (!node || isTerminated(p)) continue;
    const u = used.get(node);
    if (!u) continue;
    for (const [k, v] of Object.entries(podRequests(p))) u[k] = (u[k] || 0) + v;
    u.pods = (u.pods || 0) + 1;
  }
  return used;
}

function conditions(n: Obj) {
  const list: Obj[] = n.status?.conditions || [];
  if (!list.some((c) => c.type === "Ready")) return <Badge ok={null}>Ready=Unknown</Badge>;
  return list.map((c: Obj) => {
    // Ready should be True; the pressure conditions should be False
    const good = c.type === "Ready" ? c.status === "True" : c.status === "False";
    if (c.type !== "Ready" && good) return null;
    return <Badge key={c.type} ok={good} title={c.message}>{c.type}{c.type === "Ready" && !good ? `=${c.status}` : ""}</Badge>;
  });
}

export function Overview(_: PageProps) {
  const nodes = useList(resourcePath(RES.nodes));
  const pods = useList(resourcePath(RES.pods));
  const namespaces = useList(resourcePath(RES.namespaces));
  const events = useList(resourcePath(RES.events) + "?fieldSelector=type%3DWarning");
  const used = allocation(nodes.items, pods.items);
  const bars = (n: Obj) => {
    const alloc = n.status?.allocatable || {};
    const u = used.get(n.metadata.name) || {};
    return (
      <div class="bars">
        {RESOURCES.filter((r) => r.name in alloc).map((r) => {
          const total = parseQuantity(alloc[r.name]);
          const have = u[r.name] || 0;
          return (
            <div class="bar-row" key={r.name}>
              <span class="bar-label">{r.title}</span>
              <Bar label={`${r.title} requested on ${n.metadata.name}`} used={have} total={total}
                text={`${r.fmt(have)} / ${r.fmt(total)}`} />
            </div>
          );
        })}
      </div>
    );
  };
  const recent = events.items.slice().sort((a, b) => ageSeconds(eventTime(a)) - ageSeconds(eventTime(b))).slice(0, 50);
  return (
    <section aria-labelledby="overview-title">
      <h1 id="overview-title">Cluster overview</h1>
      <h2>Nodes ({nodes.items.length})</h2>
      <Loading loaded={nodes.loaded} error={nodes.error} />
      <Table label="Nodes" rowKey={(n) => n.metadata.name} rows={nodes.items} limit={500} columns={[
        { id: "name", title: "Name", value: (n) => n.metadata.name },
        { id: "conditions", title: "Conditions", value: (n) => readyOf(n), render: conditions },
        { id: "allocation", title: "Requested / allocatable", value: (n) => cpuShare(n, used),
          render: bars },
        { id: "taints", title: "Taints", value: (n) => (n.spec?.taints || []).length,
          render: (n) => (n.spec?.taints || []).map((t: Obj) => (
            <code class="taint" key={t.key + t.effect}>{t.key}{t.value ? `=${t.value}` : ""}:{t.effect}</code>)) },
        { id: "age", title: "Age", value: (n) => ageSeconds(n.metadata.creationTimestamp),
          render: (n) => age(n.metadata.creationTimestamp), numeric: true },
      ]} />
      <div class="two-columns">
        <div>
          <h2>Namespaces ({namespaces.items.length})</h2>
          <Table label="Namespaces" rowKey={(n) => n.metadata.name} rows={namespaces.items} columns={[
            { id: "name", title: "Name", value: (n) => n.metadata.name },
            { id: "status", title: "Status", value: (n) => n.status?.phase || "" },
            { id: "age", title: "Age", value: (n) => ageSeconds(n.metadata.creationTimestamp),
              render: (n) => age(n.metadata.creationTimestamp), numeric: true },
          ]} />
        </div>
        <div>
          <h2>Recent warnings</h2>
          <Loading loaded={events.loaded} error={events.error} />
          <Table label="Warning events" rowKey={(e) => e.metadata.namespace + "/" + e.metadata.name} rows={recent}
            initialSort="age" empty="No warnings." columns={[
              { id: "age", title: "Age", value: (e) => ageSeconds(eventTime(e)), render: (e) => age(eventTime(e)),
                numeric: true },
              { id: "object", title: "Object", value: (e) => `${e.involvedObject?.kind}/${e.involvedObject?.name}` },
              { id: "reason", title: "Reason", value: (e) => e.reason || "" },
              { id: "message", title: "Message", value: (e) => e.message || "" },
            ]} />
        </div>
      </div>
    </section>
  );
}


function readyOf(n: Obj): string {
  return (n.status?.conditions || []).find((c: Obj) => c.type === "Ready")?.status || "Unknown";
}

function cpuShare(n: Obj, used: Map<string, Record<string, number>>): number {
  const total = parseQuantity(n.status?.allocatable?.cpu);
  return total ? (used.get(n.metadata.name)?.cpu || 0) / total : 0;
}
