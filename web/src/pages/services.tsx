// Services in the chosen namespace (type, cluster IPs, external IPs, ports, selector) with each
// one's endpoints from its EndpointSlices: ready and not-ready addresses, the pod and node behind
// each, live as pods come and go; Ingresses below.
import "./resources.css";
import { RES } from "../api";
import { Actions } from "../components/actions";
import { age, ageSeconds, Badge, Loading } from "../components/misc";
import { type Column, Table } from "../components/table";
import { NET } from "../k8s/resources";
import { clusterIPs, type Endpoint, endpointsByService, externalIPs, portText, selectorText } from "../k8s/services";
import { href } from "../router";
import type { PageProps } from "../routes";
import { namespace, useValue } from "../state";
import { type Obj, objKey, useList } from "../store";
import { nsPath } from "./nspath";

function Endpoints({ svc, eps }: { svc: Obj; eps: Endpoint[] | undefined }) {
  if (svc.spec?.type === "ExternalName") return <span class="muted">none (ExternalName)</span>;
  if (!eps) return <span class="muted">{svc.spec?.selector ? "no EndpointSlice yet" : "none (no selector)"}</span>;
  if (!eps.length) return <span class="muted">no endpoints</span>;
  const ready = eps.filter((e) => e.ready).length;
  return (
    <div class="endpoints">
      <span class="visually-hidden">{ready} of {eps.length} ready</span>
      <ul aria-label={`Endpoints of ${svc.metadata.name}`}>
        {eps.map((e) => (
          <li key={e.address + e.pod} data-address={e.address} data-ready={String(e.ready)}>
            <Badge ok={e.ready}>{e.ready ? "ready" : e.terminating ? "terminating" : "not ready"}</Badge>
            <code>{e.address}</code>
            {e.pod && <> pod <a href={href("/pods/:namespace/:name", { namespace: svc.metadata.namespace, name: e.pod })}>
              {e.pod}</a></>}
            {e.node && <span class="muted"> on {e.node}</span>}
            {e.ports && <span class="muted"> · {e.ports}</span>}
          </li>
        ))}
      </ul>
    </div>
  );
}

function Ingresses({ ns }: { ns: string }) {
  const list = useList(nsPath(NET.ingresses, ns));
  const rules = (o: Obj) => (o.spec?.rules || []).flatMap((r: Obj) => (r.http?.paths || []).map((p: Obj) =>
    `${r.host || "*"}${p.path || "/"} → ${p.backend?.service ? `${p.backend.service.name}:${
      p.backend.service.port?.number ?? p.backend.service.port?.name ?? ""}` : p.backend?.resource?.name || ""}`));
  return (
    <section aria-labelledby="h-ingresses">
      <h2 id="h-ingresses">Ingresses ({list.items.length})</h2>
      <Loading loaded={list.loaded} error={list.error} />
      <Table label="Ingresses" rows={list.items} rowKey={objKey} empty="No Ingresses." columns={[
        { id: "name", title: "Name", value: (o) => o.metadata.name },
        ...(ns ? [] : [{ id: "namespace", title: "Namespace", value: (o: Obj) => o.metadata.namespace }]),
        { id: "class", title: "Class", value: (o) => o.spec?.ingressClassName || "" },
        { id: "rules", title: "Rules", value: (o) => rules(o).join(" "),
          render: (o) => <ul class="plain">{rules(o).map((r: string) => <li key={r}><code>{r}</code></li>)}</ul> },
        { id: "address", title: "Address", value: (o) => (o.status?.loadBalancer?.ingress || [])
          .map((i: Obj) => i.ip || i.hostname).join(", ") },
        { id: "age", title: "Age", value: (o) => ageSeconds(o.metadata.creationTimestamp),
          render: (o) => age(o.metadata.creationTimestamp), numeric: true },
        { id: "actions", title: "Actions", value: () => "",
          render: (o) => <Actions res={NET.ingresses} obj={{ ...o, kind: "Ingress" }} /> },
      ]} />
    </section>
  );
}

export function Services(_: PageProps) {
  const ns = useValue(namespace);
  const services = useList(nsPath(RES.services, ns));
  const slices = useList(nsPath(NET.endpointslices, ns));
  const eps = endpointsByService(slices.items);
  const columns: Column<Obj>[] = [
    { id: "name", title: "Name", value: (o) => o.metadata.name },
    ...(ns ? [] : [{ id: "namespace", title: "Namespace", value: (o: Obj) => o.metadata.namespace }]),
    { id: "type", title: "Type", value: (o) => o.spec?.type || "ClusterIP" },
    { id: "clusterIP", title: "Cluster IPs", value: clusterIPs },
    { id: "external", title: "External IPs", value: externalIPs },
    { id: "ports", title: "Ports", value: (o) => (o.spec?.ports || []).map(portText).join(", "),
      render: (o) => <ul class="plain">{(o.spec?.ports || []).map((p: Obj) => <li key={p.name || p.port}>
        <code>{portText(p)}</code></li>)}</ul> },
    { id: "selector", title: "Selector", value: (o) => selectorText(o.spec?.selector) },
    { id: "endpoints", title: "Endpoints", value: (o) => (eps.get(objKey(o)) || []).filter((e) => e.ready).length,
      render: (o) => <Endpoints svc={o} eps={eps.get(objKey(o))} /> },
    { id: "age", title: "Age", value: (o) => ageSeconds(o.metadata.creationTimestamp),
      render: (o) => age(o.metadata.creationTimestamp), numeric: true },
    { id: "actions", title: "Actions", value: () => "",
      render: (o) => <Actions res={RES.services} obj={{ ...o, kind: "Service" }} /> },
  ];
  return (
    <div>
      <h1>Services{ns ? ` in ${ns}` : ""} ({services.items.length})</h1>
      <Loading loaded={services.loaded} error={services.error || slices.error} />
      <Table label="Services" rows={services.items} rowKey={objKey} columns={columns} limit={1000} empty="No Services." />
      <Ingresses ns={ns} />
    </div>
  );
}
