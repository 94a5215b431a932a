// Pods in the chosen namespace: status as `kubectl get pods` shows it, restarts, node, IP, age.
import { RES } from "../api";
import { Actions } from "../components/actions";
import { age, ageSeconds, Loading } from "../components/misc";
import { type Column, Table } from "../components/table";
import { podStatus, readyCount, restarts } from "../k8s/pods";
import { href } from "../router";
import type { PageProps } from "../routes";
import { namespace, useValue } from "../state";
import { type Obj, objKey, useList } from "../store";
import { nsPath } from "./nspath";

export const podHref = (o: Obj) => href("/pods/:namespace/:name", { namespace: o.metadata.namespace,
  name: o.metadata.name });

export function Pods(_: PageProps) {
  const ns = useValue(namespace);
  const pods = useList(nsPath(RES.pods, ns));
  const columns: Column<Obj>[] = [
    { id: "name", title: "Name", value: (o) => o.metadata.name, render: (o) => <a href={podHref(o)}>{o.metadata.name}</a> },
    ...(ns ? [] : [{ id: "namespace", title: "Namespace", value: (o: Obj) => o.metadata.namespace }]),
    { id: "ready", title: "Ready", value: readyCount },
    { id: "status", title: "Status", value: podStatus },
    { id: "restarts", title: "Restarts", value: restarts, numeric: true },
    { id: "node", title: "Node", value: (o) => o.spec?.nodeName || "" },
    { id: "ip", title: "IP", value: (o) => o.status?.podIP || "" },
    { id: "age", title: "Age", value: (o) => ageSeconds(o.metadata.creationTimestamp),
      render: (o) => age(o.metadata.creationTimestamp), numeric: true },
    { id: "actions", title: "Actions", value: () => "",
      render: (o) => <Actions res={RES.pods} obj={{ ...o, kind: "Pod" }} /> },
  ];
  return (
    <div>
      <h1>Pods{ns ? ` in ${ns}` : ""} ({pods.items.length})</h1>
      <Loading loaded={pods.loaded} error={pods.error} />
      <Table label="Pods" rows={pods.items} rowKey={objKey} columns={columns} limit={1000} empty="No pods." />
    </div>
  );
}
