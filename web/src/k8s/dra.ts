// DRA ResourceClaims allocated to our GPU driver's devices (docs/dra.md): per node (the driver's
// pool is the node's name), which claim holds which devices ("gpu-0", "gpu-1-share-2") for which pods.
import type { Obj } from "../store";

export const GPU_DRIVER = "gpu.pyk8s.io";
export const CLAIMS_PATH = "/apis/resource.k8s.io/v1beta1/resourceclaims";

export interface GpuClaim {
  namespace: string;
  name: string;
  devices: string[];
  pods: string[]; // status.reservedFor's pods
}

export function gpuClaimsByNode(claims: Obj[]): Map<string, GpuClaim[]> {
  const out = new Map<string, GpuClaim[]>();
  for (const c of claims) {
    const byNode = new Map<string, string[]>();
    for (const r of c.status?.allocation?.devices?.results || []) {
      if (r.driver !== GPU_DRIVER || !r.pool || !r.device) continue;
      byNode.set(r.pool, [...(byNode.get(r.pool) || []), String(r.device)]);
    }
    const pods = (c.status?.reservedFor || []).filter((x: Obj) => x.resource === "pods").map((x: Obj) => String(x.name));
    for (const [node, devices] of byNode) {
      const list = out.get(node) || [];
      list.push({ namespace: c.metadata?.namespace || "", name: c.metadata?.name || "", devices: devices.sort(), pods });
      out.set(node, list);
    }
  }
  return out;
}
