// gpushare's accounting, by the same rules as `pyk8s gpu inspect` (src/pyk8s/gpu/share.py and
// inspect.py): a node counts when its capacity has aliyun.com/gpu-mem (GiB, all GPUs together;
// without aliyun.com/gpu-count it is one GPU holding all of it); a pod holds its containers'
// gpu-mem (limit, else request) on the GPU its ALIYUN_COM_GPU_MEM_IDX annotation names while it
// is bound and not finished. Whole GPUs (nvidia.com/gpu) are a separate pool.
import type { Obj } from "../store";

export const RESOURCE_GPU = "nvidia.com/gpu";
export const RESOURCE_MEM = "aliyun.com/gpu-mem";
export const RESOURCE_COUNT = "aliyun.com/gpu-count";
export const ANN_IDX = "ALIYUN_COM_GPU_MEM_IDX";
// `pyk8s sim` records the env Allocate gives each container (NVIDIA_VISIBLE_DEVICES) here
export const ENV_ANNOTATION = "gpu.pyk8s.io/allocated-env";

// Python's int(str(v)) for the integers these fields hold; anything else counts 0
function int(v: unknown): number {
  if (v === undefined || v === null) return 0;
  const s = String(v).trim();
  return /^[+-]?\d+$/.test(s) ? parseInt(s, 10) : 0;
}

function containerAmount(c: Obj, resource: string): number {
  const r = c.resources || {};
  return Math.max(int(r.limits?.[resource] || r.requests?.[resource] || 0), 0);
}

export function podGpuMem(pod: Obj): number {
  return (pod.spec?.containers || []).reduce((n: number, c: Obj) => n + containerAmount(c, RESOURCE_MEM), 0);
}

export function podWholeGpus(pod: Obj): number {
  return (pod.spec?.containers || []).reduce((n: number, c: Obj) => n + containerAmount(c, RESOURCE_GPU), 0);
}

// [GPU count, GiB per GPU]; [0, 0] for a node without shared GPUs
export function nodeGpus(node: Obj): [number, number] {
  const cap = node.status?.capacity || {};
  let count = int(cap[RESOURCE_COUNT]);
  const mem = int(cap[RESOURCE_MEM]);
  if (mem <= 0) return [0, 0];
  if (count <= 0) count = 1;
  return [count, Math.floor(mem / count)];
}

export function assignedIndex(pod: Obj): number | null {
  const v = pod.metadata?.annotations?.[ANN_IDX];
  if (v === undefined || v === null) return null;
  const s = String(v).trim();
  if (!/^[+-]?\d+$/.test(s)) return null;
  const i = parseInt(s, 10);
  return i >= 0 ? i : null;
}

// bound and not finished: it holds its share
export function isActive(pod: Obj): boolean {
  const phase = pod.status?.phase;
  return Boolean(pod.spec?.nodeName) && phase !== "Succeeded" && phase !== "Failed";
}

export interface Share {
  namespace: string;
  name: string;
  gpu: number;
  gib: number;
}

export interface WholeGpuPod {
  namespace: string;
  name: string;
  count: number;
  devices: string[]; // the GPUs' UUIDs where the allocation is recorded (simulated nodes)
}

export interface NodeGpus {
  name: string;
  address: string;
  count: number;
  perGpu: number;
  used: number[];
  shares: Share[];
  wholeTotal: number; // nvidia.com/gpu allocatable
  whole: WholeGpuPod[];
}

export const total = (n: NodeGpus) => n.count * n.perGpu;
export const allocated = (n: NodeGpus) => n.used.reduce((a, b) => a + b, 0);
// inspect's "(27%)": whole percent, rounded down
export const pct = (a: number, t: number) => (t ? `${Math.floor((a * 100) / t)}%` : "0%");

function address(node: Obj): string {
  return (node.status?.addresses || []).find((a: Obj) => a.type === "InternalIP")?.address || "";
}

function visibleDevices(pod: Obj): string[] {
  const raw = pod.metadata?.annotations?.[ENV_ANNOTATION];
  if (!raw) return [];
  try {
    const envs = JSON.parse(raw) as Record<string, Record<string, string>>;
    return Object.values(envs).flatMap((e) => String(e?.NVIDIA_VISIBLE_DEVICES || "").split(",").filter(Boolean));
  } catch {
    return [];
  }
}

// code-point order, as Python sorts strings
const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

// nodes with shared or whole GPUs, by name, with who holds what
export function collect(nodes: Obj[], pods: Obj[]): NodeGpus[] {
  const out = new Map<string, NodeGpus>();
  for (const n of nodes) {
    const [count, perGpu] = nodeGpus(n);
    const wholeTotal = int(n.status?.allocatable?.[RESOURCE_GPU] ?? n.status?.capacity?.[RESOURCE_GPU]);
    if (!count && !wholeTotal) continue;
    out.set(n.metadata.name, { name: n.metadata.name, address: address(n), count, perGpu,
      used: new Array(count).fill(0), shares: [], wholeTotal, whole: [] });
  }
  for (const p of pods) {
    if (!isActive(p)) continue;
    const ng = out.get(p.spec.nodeName);
    if (!ng) continue;
    const md = p.metadata || {};
    const gib = podGpuMem(p);
    const idx = assignedIndex(p);
    if (gib > 0 && idx !== null && idx < ng.count) {
      ng.used[idx] += gib;
      ng.shares.push({ namespace: md.namespace || "", name: md.name || "", gpu: idx, gib });
    }
    const whole = podWholeGpus(p);
    if (whole > 0) ng.whole.push({ namespace: md.namespace || "", name: md.name || "", count: whole,
      devices: visibleDevices(p) });
  }
  const list = [...out.values()].sort((a, b) => cmp(a.name, b.name));
  for (const n of list) n.shares.sort((a, b) => a.gpu - b.gpu || cmp(a.namespace, b.namespace) || cmp(a.name, b.name));
  return list;
}

// not yet bound, asking for GPU memory or whole GPUs
export function pendingGpuPods(pods: Obj[]): Obj[] {
  return pods.filter((p) => !p.spec?.nodeName && !p.metadata?.deletionTimestamp
    && p.status?.phase !== "Succeeded" && p.status?.phase !== "Failed"
    && (podGpuMem(p) > 0 || podWholeGpus(p) > 0));
}

// the scheduler's word on a pod it could not place (PodScheduled=False's message, as FailedScheduling's)
export function schedulingMessage(pod: Obj): string {
  const c = (pod.status?.conditions || []).find((x: Obj) => x.type === "PodScheduled" && x.status === "False");
  return c?.message || "";
}
