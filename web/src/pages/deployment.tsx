// One Deployment: its rollout (conditions) and revision history (its ReplicaSets by revision).
import { RES, resourcePath } from "../api";
import { Actions } from "../components/actions";
import { age, ageSeconds, Badge, Loading } from "../components/misc";
import { Table } from "../components/table";
import { images, progress, revision, revisions } from "../k8s/workloads";
import { navigate } from "../router";
import type { PageProps } from "../routes";
import { objKey, useList } from "../store";

export function DeploymentPage({ params }: PageProps) {
  const { namespace, name } = params;
  const deps = useList(resourcePath({ ...RES.deployments, namespace }) + `?fieldSelector=metadata.name%3D${encodeURIComponent(name)}`);
  const rss = useList(resourcePath({ ...RES.replicasets, namespace }));
  const d = deps.items[0];
  if (!d) return <div><h1>Deployment {name}</h1><Loading loaded={deps.loaded} error={deps.error} />
    {deps.loaded && !deps.error && <p>Not found.</p>}</div>;
  const obj = { ...d, kind: "Deployment" };
  const history = revisions(d, rss.items);
  const current = history.find((rs) => rs.metadata?.annotations?.["deployment.kubernetes.io/revision"]
    === d.metadata?.annotations?.["deployment.kubernetes.io/revision"]);
  return (
    <div>
      <h1>Deployment {namespace}/{name}</h1>
      <Actions res={RES.deployments} obj={obj} canScale canRestart after={() => navigate("/workloads")} />
      <dl class="meta">
        <dt>Rollout</dt><dd>{progress("Deployment", d).text}</dd>
        <dt>Strategy</dt><dd>{d.spec?.strategy?.type || "RollingUpdate"}</dd>
        <dt>Images</dt><dd>{images(d.spec?.template)}</dd>
        <dt>Conditions</dt>
        <dd>{(d.status?.conditions || []).map((c: any) => (
          <Badge key={c.type} ok={c.status === "True"} title={c.message}>{c.type}: {c.reason}</Badge>))}</dd>
      </dl>
      <h2>Revision history</h2>
      <Table label="Revisions" rows={history} rowKey={objKey} initialSort="revision" descending columns={[
        { id: "revision", title: "Revision", value: revision, numeric: true },
        { id: "name", title: "ReplicaSet", value: (rs) => rs.metadata.name,
          render: (rs) => <>{rs.metadata.name}{" "}{rs === current && <Badge ok={true}>current</Badge>}</> },
        { id: "images", title: "Images", value: (rs) => images(rs.spec?.template) },
        { id: "replicas", title: "Ready / desired", value: (rs) => rs.spec?.replicas ?? 0,
          render: (rs) => `${rs.status?.readyReplicas || 0}/${rs.spec?.replicas ?? 0}` },
        { id: "age", title: "Age", value: (rs) => ageSeconds(rs.metadata.creationTimestamp),
          render: (rs) => age(rs.metadata.creationTimestamp), numeric: true },
      ]} />
    </div>
  );
}
