// One pod: its conditions, containers, events, and for a Pending pod why it is pending (the
// scheduler's FailedScheduling message, which names what each node lacks).
import { RES, resourcePath } from "../api";
import { Actions } from "../components/actions";
import { age, ageSeconds, Badge, Loading } from "../components/misc";
import { Table } from "../components/table";
import { eventCount, lastSeen } from "../k8s/events";
import { podStatus, restarts } from "../k8s/pods";
import { href, navigate } from "../router";
import type { PageProps } from "../routes";
import { type Obj, objKey, useList } from "../store";

function state(cs: Obj | undefined): string {
  const s = cs?.state || {};
  if (s.running) return `Running since ${age(s.running.startedAt)}`;
  if (s.waiting) return `Waiting: ${s.waiting.reason || ""}${s.waiting.message ? ` (${s.waiting.message})` : ""}`;
  if (s.terminated) return `Terminated: ${s.terminated.reason || ""} (exit ${s.terminated.exitCode})`;
  return "";
}

// "0/5 nodes are available: 2 Insufficient cpu, 3 node(s) had untolerated taint {...}. preemption: ..."
// as a list: how many nodes each reason rules out
function SchedulingReasons({ message }: { message: string }) {
  const m = /^(\d+)\/(\d+) nodes are available: (.*?)\.(?: preemption:|$)/.exec(message);
  if (!m) return null;
  const parts = m[3].split(/, (?=\d+ )/);
  return (
    <ul class="scheduling-reasons" aria-label="Nodes ruled out, by reason">
      {parts.map((p) => {
        const n = /^(\d+) (.*)$/.exec(p);
        return <li key={p}>{n ? <><strong>{n[1]} of {m[2]} nodes:</strong> {n[2]}</> : p}</li>;
      })}
    </ul>
  );
}

export function PodPage({ params }: PageProps) {
  const { namespace, name } = params;
  const pods = useList(resourcePath({ ...RES.pods, namespace }) + `?fieldSelector=metadata.name%3D${encodeURIComponent(name)}`);
  const events = useList(resourcePath({ ...RES.events, namespace }) +
    `?fieldSelector=${encodeURIComponent(`involvedObject.kind=Pod,involvedObject.name=${name}`)}`);
  const pod = pods.items[0];
  if (!pod) return <div><h1>Pod {name}</h1><Loading loaded={pods.loaded} error={pods.error} />
    {pods.loaded && !pods.error && <p>Not found.</p>}</div>;
  const uid = pod.metadata.uid;
  const mine = events.items.filter((e) => !e.involvedObject?.uid || e.involvedObject.uid === uid);
  const pending = pod.status?.phase === "Pending";
  const unschedulable = mine.filter((e) => e.reason === "FailedScheduling")
    .sort((a, b) => ageSeconds(lastSeen(a)) - ageSeconds(lastSeen(b)));
  const statuses = new Map<string, Obj>([...(pod.status?.initContainerStatuses || []),
    ...(pod.status?.containerStatuses || [])].map((c: Obj) => [c.name, c]));
  const containers = [...(pod.spec?.initContainers || []).map((c: Obj) => ({ ...c, init: true })),
    ...(pod.spec?.containers || [])];
  const p = { namespace, name };
  return (
    <div>
      <h1>Pod {namespace}/{name}</h1>
      <div class="toolbar">
        <a class="button-link" href={href("/logs/:namespace/:name", p)}>Logs</a>
        <a class="button-link" href={href("/exec/:namespace/:name", p)}>Terminal</a>
        <Actions res={RES.pods} obj={{ ...pod, kind: "Pod" }} after={() => navigate("/pods")} />
      </div>
      {pending && (
        <section class="pending" aria-labelledby="why-pending">
          <h2 id="why-pending">Why is it Pending?</h2>
          {unschedulable.length ? unschedulable.slice(0, 1).map((e) => (
            <div key={e.metadata.name}>
              <p class="scheduling-message">{e.message}</p>
              <SchedulingReasons message={e.message || ""} />
            </div>))
            : <p>{pod.spec?.nodeName ? `Bound to ${pod.spec.nodeName}: ${podStatus(pod)}` : "Not scheduled yet."}</p>}
        </section>
      )}
      <dl class="meta">
        <dt>Status</dt><dd>{podStatus(pod)}</dd>
        <dt>Node</dt><dd>{pod.spec?.nodeName || "(none)"}</dd>
        <dt>Pod IP</dt><dd>{pod.status?.podIP || ""}</dd>
        <dt>Restarts</dt><dd>{restarts(pod)}</dd>
        <dt>QoS class</dt><dd>{pod.status?.qosClass || ""}</dd>
        <dt>Age</dt><dd>{age(pod.metadata.creationTimestamp)}</dd>
      </dl>
      <h2>Conditions</h2>
      <Table<Obj> label="Conditions" rows={pod.status?.conditions || []} rowKey={(c) => c.type} columns={[
        { id: "type", title: "Type", value: (c) => c.type },
        { id: "status", title: "Status", value: (c) => c.status,
          render: (c) => <Badge ok={c.status === "True"}>{c.status}</Badge> },
        { id: "reason", title: "Reason", value: (c) => c.reason || "" },
        { id: "message", title: "Message", value: (c) => c.message || "" },
        { id: "since", title: "Since", value: (c) => ageSeconds(c.lastTransitionTime),
          render: (c) => age(c.lastTransitionTime), numeric: true },
      ]} />
      <h2>Containers</h2>
      <Table<Obj> label="Containers" rows={containers} rowKey={(c) => c.name} columns={[
        { id: "name", title: "Name", value: (c) => c.name + (c.init ? " (init)" : "") },
        { id: "image", title: "Image", value: (c) => c.image },
        { id: "ready", title: "Ready", value: (c) => (statuses.get(c.name)?.ready ? "yes" : "no") },
        { id: "restarts", title: "Restarts", value: (c) => statuses.get(c.name)?.restartCount || 0, numeric: true },
        { id: "state", title: "State", value: (c) => state(statuses.get(c.name)) },
      ]} />
      <h2>Events</h2>
      <Table label="Events" rows={mine} rowKey={objKey} initialSort="age" empty="No events." columns={[
        { id: "age", title: "Age", value: (e) => ageSeconds(lastSeen(e)), render: (e) => age(lastSeen(e)), numeric: true },
        { id: "type", title: "Type", value: (e) => e.type },
        { id: "reason", title: "Reason", value: (e) => e.reason },
        { id: "count", title: "Count", value: eventCount, numeric: true },
        { id: "message", title: "Message", value: (e) => e.message || "" },
      ]} />
    </div>
  );
}
