// Service facts as `kubectl get services` and `kubectl describe service` show them, and a
// Service's endpoints gathered from its discovery.k8s.io/v1 EndpointSlices.
import type { Obj } from "../store";

// "80:30080/TCP" as kubectl's PORT(S), with the target port: "80→8080:30080/TCP"
export function portText(p: Obj): string {
  const target = p.targetPort !== undefined && String(p.targetPort) !== String(p.port) ? `→${p.targetPort}` : "";
  return `${p.name ? p.name + " " : ""}${p.port}${target}${p.nodePort ? `:${p.nodePort}` : ""}/${p.protocol || "TCP"}`;
}

export function clusterIPs(svc: Obj): string {
  const s = svc.spec || {};
  if (s.type === "ExternalName") return "";
  return (s.clusterIPs || (s.clusterIP ? [s.clusterIP] : [])).join(", ");
}

// EXTERNAL-IP as kubectl prints it: externalIPs, the load balancer's ingress, or an ExternalName
export function externalIPs(svc: Obj): string {
  const s = svc.spec || {};
  if (s.type === "ExternalName") return s.externalName || "";
  const lb = (svc.status?.loadBalancer?.ingress || []).map((i: Obj) => i.ip || i.hostname).filter(Boolean);
  const all = [...(s.externalIPs || []), ...lb];
  if (all.length) return all.join(", ");
  return s.type === "LoadBalancer" ? "<pending>" : "";
}

export function selectorText(sel: Record<string, string> | undefined): string {
  return Object.entries(sel || {}).map(([k, v]) => `${k}=${v}`).join(", ");
}

export interface Endpoint {
  address: string;
  ready: boolean;
  serving: boolean;
  terminating: boolean;
  pod: string; // the targetRef's name when it is a Pod
  node: string;
  ports: string; // the slice's ports: "http 8080/TCP"
}

export const SERVICE_NAME = "kubernetes.io/service-name";

// the endpoints of every Service, keyed "namespace/name", from the EndpointSlices that name it
export function endpointsByService(slices: Obj[]): Map<string, Endpoint[]> {
  const out = new Map<string, Endpoint[]>();
  for (const s of slices) {
    const svc = s.metadata?.labels?.[SERVICE_NAME];
    if (!svc) continue;
    const key = `${s.metadata.namespace}/${svc}`;
    const ports = (s.ports || []).map((p: Obj) => `${p.name ? p.name + " " : ""}${p.port}/${p.protocol || "TCP"}`)
      .join(", ");
    const list = out.get(key) || [];
    for (const e of s.endpoints || []) {
      const c = e.conditions || {};
      // upstream: a nil ready condition means ready
      const ready = c.ready !== false;
      for (const address of e.addresses || []) {
        list.push({ address, ready, serving: c.serving ?? ready, terminating: Boolean(c.terminating),
          pod: e.targetRef?.kind === "Pod" ? e.targetRef.name : "", node: e.nodeName || "", ports });
      }
    }
    out.set(key, list);
  }
  for (const l of out.values()) l.sort((a, b) => Number(b.ready) - Number(a.ready) || a.address.localeCompare(b.address));
  return out;
}
