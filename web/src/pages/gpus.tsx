// GPU sharing: per node, per GPU a memory map of the gpushare shares (which pod holds how many
// GiB), whole GPUs (nvidia.com/gpu) and who holds them, totals per node and cluster as
// `pyk8s gpu inspect` prints them, and the GPU pods still waiting for a node with the scheduler's
// reason; DRA ResourceClaims holding the node's gpu.pyk8s.io devices. Live over the store's watches.
import { RES, resourcePath } from "../api";
import { Loading } from "../components/misc";
import { Table } from "../components/table";
import { CLAIMS_PATH, type GpuClaim, gpuClaimsByNode } from "../k8s/dra";
import { allocated, collect, type NodeGpus, pct, pendingGpuPods, podGpuMem, podWholeGpus, schedulingMessage,
  type Share, total } from "../k8s/gpushare";
import { href } from "../router";
import type { PageProps } from "../routes";
import { type Obj, objKey, useList } from "../store";
import "./gpus.css";

// a light colour per pod (dark text stays readable on it), the same on every render
export function podColour(key: string): string {
  let h = 2166136261;
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 16777619);
  return `hsl(${(h >>> 0) % 360} 70% 80%)`;
}

const podLink = (ns: string, name: string) => href("/pods/:namespace/:name", { namespace: ns, name });

function GpuBar({ node, gpu }: { node: NodeGpus; gpu: number }) {
  const shares = node.shares.filter((s) => s.gpu === gpu);
  const used = node.used[gpu];
  const free = Math.max(node.perGpu - used, 0);
  const label = `GPU${gpu} of ${node.name}`;
  return (
    <div class="gpu-row">
      <span class="gpu-name">GPU{gpu}</span>
      <div class="gpu-map" role="group" aria-label={`${label}: ${used}/${node.perGpu} GiB allocated`}
        data-gpu={gpu}>
        {shares.map((s: Share) => {
          const text = `${s.namespace}/${s.name}: ${s.gib} GiB on ${label}`;
          return (
            <a class="gpu-share" key={`${s.namespace}/${s.name}`} href={podLink(s.namespace, s.name)}
              data-pod={`${s.namespace}/${s.name}`} data-gib={s.gib} aria-label={text} title={text}
              style={{ flexGrow: s.gib, flexBasis: 0, background: podColour(`${s.namespace}/${s.name}`) }}>
              <span class="gpu-share-text">{s.name} {s.gib} GiB</span>
            </a>
          );
        })}
        {free > 0 && <span class="gpu-free" style={{ flexGrow: free, flexBasis: 0 }}
          title={`${free} GiB free on ${label}`}>{free} GiB free</span>}
      </div>
      <span class="gpu-total" data-gpu-total={gpu}>{used}/{node.perGpu} GiB</span>
    </div>
  );
}

function NodeCard({ node, claims }: { node: NodeGpus; claims: GpuClaim[] }) {
  const t = total(node);
  const a = allocated(node);
  const wholeUsed = node.whole.reduce((n, w) => n + w.count, 0);
  return (
    <section class="gpu-node" data-node={node.name} aria-labelledby={`gpu-node-${node.name}`}>
      <h2 id={`gpu-node-${node.name}`}>{node.name} <span class="muted">{node.address}</span></h2>
      {node.count > 0 && <>
        <p class="gpu-node-total" data-node-total>Allocated/Total GPU Memory: {a}/{t} ({pct(a, t)})</p>
        {node.used.map((_, i) => <GpuBar key={i} node={node} gpu={i} />)}
        <details>
          <summary>Shares on {node.name} ({node.shares.length})</summary>
          <Table label={`GPU shares on ${node.name}`} rows={node.shares} rowKey={(s) => `${s.namespace}/${s.name}`}
            empty="No pod holds a share." columns={[
              { id: "name", title: "Name", value: (s) => s.name,
                render: (s) => <a href={podLink(s.namespace, s.name)}>{s.name}</a> },
              { id: "namespace", title: "Namespace", value: (s) => s.namespace },
              { id: "gpu", title: "GPU", value: (s) => s.gpu, numeric: true },
              { id: "gib", title: "GiB", value: (s) => s.gib, numeric: true },
            ]} />
        </details>
      </>}
      {node.wholeTotal > 0 && <>
        <p class="gpu-whole-total" data-whole-total>Whole GPUs (nvidia.com/gpu): {wholeUsed}/{node.wholeTotal} allocated</p>
        {node.whole.length > 0 && <Table label={`Whole GPUs on ${node.name}`} rows={node.whole}
          rowKey={(w) => `${w.namespace}/${w.name}`} columns={[
            { id: "name", title: "Pod", value: (w) => `${w.namespace}/${w.name}`,
              render: (w) => <a href={podLink(w.namespace, w.name)}>{w.namespace}/{w.name}</a> },
            { id: "count", title: "GPUs", value: (w) => w.count, numeric: true },
            { id: "devices", title: "Devices", value: (w) => w.devices.join(", ") || "(not recorded)" },
          ]} />}
      </>}
      {claims.length > 0 && <Table label={`DRA claims on ${node.name}`} rows={claims}
        rowKey={(c) => `${c.namespace}/${c.name}`} columns={[
          { id: "claim", title: "ResourceClaim", value: (c) => `${c.namespace}/${c.name}` },
          { id: "devices", title: "Devices (gpu.pyk8s.io)", value: (c) => c.devices.join(", ") },
          { id: "pods", title: "Reserved for", value: (c) => c.pods.join(", "),
            render: (c) => c.pods.map((p, i) => <span key={p}>{i ? ", " : ""}<a href={podLink(c.namespace, p)}>{p}</a></span>) },
        ]} />}
    </section>
  );
}

export function GpuSharing(_: PageProps) {
  const nodes = useList(resourcePath(RES.nodes));
  const pods = useList(resourcePath(RES.pods));
  // DRA claims on our GPU driver's devices; a cluster without resource.k8s.io just shows none
  const claims = gpuClaimsByNode(useList(CLAIMS_PATH).items);
  const gpus = collect(nodes.items, pods.items);
  const shared = gpus.filter((g) => g.count > 0);
  const a = shared.reduce((n, g) => n + allocated(g), 0);
  const t = shared.reduce((n, g) => n + total(g), 0);
  const pending = pendingGpuPods(pods.items);
  return (
    <section aria-labelledby="gpus-title">
      <h1 id="gpus-title">GPU sharing</h1>
      <Loading loaded={nodes.loaded && pods.loaded} error={nodes.error || pods.error} />
      {nodes.loaded && <p class="gpu-cluster-total" data-cluster-total>
        Allocated/Total GPU Memory In Cluster: {a}/{t} ({pct(a, t)})</p>}
      {nodes.loaded && !gpus.length && <p>No node with shared GPUs (aliyun.com/gpu-mem) or whole GPUs
        (nvidia.com/gpu) found.</p>}
      {pending.length > 0 && <>
        <h2>Pending GPU pods ({pending.length})</h2>
        <Table label="Pending GPU pods" rows={pending} rowKey={objKey} columns={[
          { id: "name", title: "Pod", value: (p: Obj) => objKey(p),
            render: (p: Obj) => <a href={podLink(p.metadata.namespace, p.metadata.name)}>{objKey(p)}</a> },
          { id: "asks", title: "Asks for", value: (p: Obj) => asks(p) },
          { id: "why", title: "Why pending", value: (p: Obj) => schedulingMessage(p) || "Not scheduled yet." },
        ]} />
      </>}
      {gpus.map((g) => <NodeCard key={g.name} node={g} claims={claims.get(g.name) || []} />)}
    </section>
  );
}

function asks(p: Obj): string {
  const parts = [];
  if (podGpuMem(p)) parts.push(`${podGpuMem(p)} GiB GPU memory`);
  if (podWholeGpus(p)) parts.push(`${podWholeGpus(p)} whole GPU(s)`);
  return parts.join(", ");
}
