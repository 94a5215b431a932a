// Pod facts the pages show, computed as kubectl and the scheduler do.
import type { Obj } from "../store";
import { parseQuantity } from "./quantity";

// a pod's requests as the scheduler counts them: the larger of the containers' sum and each
// init container's, plus the pod overhead (upstream's resource.PodRequests)
export function podRequests(pod: Obj): Record<string, number> {
  const sum: Record<string, number> = {};
  const add = (to: Record<string, number>, req: Record<string, string> | undefined) => {
    for (const [k, v] of Object.entries(req || {})) to[k] = (to[k] || 0) + parseQuantity(v);
  };
  for (const c of pod.spec?.containers || []) add(sum, c.resources?.requests);
  // sidecars (restartPolicy Always init containers) run beside the containers
  const sidecars: Record<string, number> = {};
  for (const c of pod.spec?.initContainers || []) {
    if (c.restartPolicy === "Always") {
      add(sum, c.resources?.requests);
      add(sidecars, c.resources?.requests);
    } else {
      const one: Record<string, number> = {};
      add(one, c.resources?.requests);
      for (const [k, v] of Object.entries(one)) sum[k] = Math.max(sum[k] || 0, v + (sidecars[k] || 0));
    }
  }
  add(sum, pod.spec?.overhead);
  return sum;
}

export function isTerminated(pod: Obj): boolean {
  const p = pod.status?.phase;
  return p === "Succeeded" || p === "Failed";
}

export function restarts(pod: Obj): number {
  return (pod.status?.containerStatuses || []).reduce((n: number, c: Obj) => n + (c.restartCount || 0), 0);
}

export function readyCount(pod: Obj): string {
  const cs = pod.status?.containerStatuses || [];
  const total = (pod.spec?.containers || []).length;
  return `${cs.filter((c: Obj) => c.ready).length}/${total}`;
}

// the STATUS column of `kubectl get pods`
export function podStatus(pod: Obj): string {
  if (pod.metadata?.deletionTimestamp) return "Terminating";
  let reason = pod.status?.reason || pod.status?.phase || "Unknown";
  for (const c of pod.status?.initContainerStatuses || []) {
    const t = c.state?.terminated;
    if (t && t.exitCode === 0) continue;
    if (t) return `Init:${t.reason || "Error"}`;
    if (c.state?.waiting?.reason && c.state.waiting.reason !== "PodInitializing") return `Init:${c.state.waiting.reason}`;
    if (c.state?.waiting || c.state?.running) return "Init:0/" + (pod.spec?.initContainers || []).length;
  }
  for (const c of pod.status?.containerStatuses || []) {
    if (c.state?.waiting?.reason) reason = c.state.waiting.reason;
    else if (c.state?.terminated?.reason) reason = c.state.terminated.reason;
  }
  return reason;
}

export function containerNames(pod: Obj): string[] {
  return [...(pod.spec?.initContainers || []), ...(pod.spec?.containers || [])].map((c: Obj) => c.name);
}
