// PersistentVolumeClaims in the chosen namespace: status, volume, capacity, access modes, class,
// the pods using each, and for a Pending claim why (its latest event: WaitForFirstConsumer,
// ProvisioningFailed, ...); PersistentVolumes and StorageClasses below, where RBAC lets the user
// list them (the view role does not).
import "./resources.css";
import { RES } from "../api";
import { Actions } from "../components/actions";
import { age, ageSeconds, Badge, Loading } from "../components/misc";
import { type Column, Table } from "../components/table";
import { STORAGE } from "../k8s/resources";
import { accessModes, claimStatus, DEFAULT_CLASS, latestEvents, podsByClaim } from "../k8s/storage";
import { useCan } from "../rbac";
import { href } from "../router";
import type { PageProps } from "../routes";
import { namespace, useValue } from "../state";
import { type Obj, objKey, useList } from "../store";
import { nsPath } from "./nspath";

const ageCol: Column<Obj> = { id: "age", title: "Age", value: (o) => ageSeconds(o.metadata.creationTimestamp),
  render: (o) => age(o.metadata.creationTimestamp), numeric: true };

function phaseBadge(phase: string) {
  return <Badge ok={phase === "Bound" ? true : phase === "Pending" || phase === "Available" ? null : false}>{phase}</Badge>;
}

function Volumes() {
  const may = useCan({ verb: "list", group: "", resource: "persistentvolumes" });
  const list = useList(may ? nsPath(STORAGE.pvs, "") : null);
  return (
    <section aria-labelledby="h-pvs">
      <h2 id="h-pvs">PersistentVolumes{may ? ` (${list.items.length})` : ""}</h2>
      {!may ? <p class="muted">Your user may not list PersistentVolumes.</p> : <>
        <Loading loaded={list.loaded} error={list.error} />
        <Table label="PersistentVolumes" rows={list.items} rowKey={objKey} empty="No PersistentVolumes." columns={[
          { id: "name", title: "Name", value: (o) => o.metadata.name },
          { id: "capacity", title: "Capacity", value: (o) => o.spec?.capacity?.storage || "" },
          { id: "modes", title: "Access modes", value: (o) => accessModes(o.spec?.accessModes) },
          { id: "reclaim", title: "Reclaim policy", value: (o) => o.spec?.persistentVolumeReclaimPolicy || "" },
          { id: "status", title: "Status", value: (o) => o.status?.phase || "", render: (o) => phaseBadge(o.status?.phase || "") },
          { id: "claim", title: "Claim", value: (o) => o.spec?.claimRef ? `${o.spec.claimRef.namespace}/${o.spec.claimRef.name}` : "" },
          { id: "class", title: "Storage class", value: (o) => o.spec?.storageClassName || "" },
          { id: "reason", title: "Reason", value: (o) => o.status?.reason || "" },
          ageCol,
          { id: "actions", title: "Actions", value: () => "",
            render: (o) => <Actions res={STORAGE.pvs} obj={{ ...o, kind: "PersistentVolume" }} /> },
        ]} />
      </>}
    </section>
  );
}

function Classes() {
  const may = useCan({ verb: "list", group: "storage.k8s.io", resource: "storageclasses" });
  const list = useList(may ? nsPath(STORAGE.storageclasses, "") : null);
  return (
    <section aria-labelledby="h-classes">
      <h2 id="h-classes">StorageClasses{may ? ` (${list.items.length})` : ""}</h2>
      {!may ? <p class="muted">Your user may not list StorageClasses.</p> : <>
        <Loading loaded={list.loaded} error={list.error} />
        <Table label="StorageClasses" rows={list.items} rowKey={objKey} empty="No StorageClasses." columns={[
          { id: "name", title: "Name", value: (o) => o.metadata.name,
            render: (o) => <>{o.metadata.name}{o.metadata.annotations?.[DEFAULT_CLASS] === "true" && " (default)"}</> },
          { id: "provisioner", title: "Provisioner", value: (o) => o.provisioner || "" },
          { id: "reclaim", title: "Reclaim policy", value: (o) => o.reclaimPolicy || "Delete" },
          { id: "binding", title: "Volume binding mode", value: (o) => o.volumeBindingMode || "Immediate" },
          { id: "expansion", title: "Expansion", value: (o) => (o.allowVolumeExpansion ? "allowed" : "no") },
          ageCol,
        ]} />
      </>}
    </section>
  );
}

export function Pvcs(_: PageProps) {
  const ns = useValue(namespace);
  const claims = useList(nsPath(STORAGE.pvcs, ns));
  const pods = useList(nsPath(RES.pods, ns));
  const events = useList(nsPath(RES.events, ns, "?fieldSelector=involvedObject.kind%3DPersistentVolumeClaim"));
  const users = podsByClaim(pods.items);
  const latest = latestEvents(events.items);
  const columns: Column<Obj>[] = [
    { id: "name", title: "Name", value: (o) => o.metadata.name },
    ...(ns ? [] : [{ id: "namespace", title: "Namespace", value: (o: Obj) => o.metadata.namespace }]),
    { id: "status", title: "Status", value: claimStatus, render: (o) => {
      const s = claimStatus(o);
      const e = s === "Pending" ? latest.get(objKey(o)) : undefined;
      return <>{phaseBadge(s)}{e && <p class="claim-reason"><strong>{e.reason}</strong>: {e.message}</p>}</>;
    } },
    { id: "volume", title: "Volume", value: (o) => o.spec?.volumeName || "" },
    { id: "capacity", title: "Capacity", value: (o) => o.status?.capacity?.storage || "",
      render: (o) => o.status?.capacity?.storage
        || <span class="muted">{o.spec?.resources?.requests?.storage} requested</span> },
    { id: "modes", title: "Access modes", value: (o) => accessModes(o.status?.accessModes || o.spec?.accessModes) },
    { id: "class", title: "Storage class", value: (o) => o.spec?.storageClassName || "" },
    { id: "pods", title: "Used by", value: (o) => (users.get(objKey(o)) || []).join(", "),
      render: (o) => <ul class="plain">{(users.get(objKey(o)) || []).map((p) => <li key={p}>
        <a href={href("/pods/:namespace/:name", { namespace: o.metadata.namespace, name: p })}>{p}</a></li>)}</ul> },
    ageCol,
    { id: "actions", title: "Actions", value: () => "",
      render: (o) => <Actions res={STORAGE.pvcs} obj={{ ...o, kind: "PersistentVolumeClaim" }} /> },
  ];
  return (
    <div>
      <h1>PersistentVolumeClaims{ns ? ` in ${ns}` : ""} ({claims.items.length})</h1>
      <Loading loaded={claims.loaded} error={claims.error} />
      <Table label="PersistentVolumeClaims" rows={claims.items} rowKey={objKey} columns={columns} limit={1000}
        empty="No PersistentVolumeClaims." />
      <Volumes />
      <Classes />
    </div>
  );
}
