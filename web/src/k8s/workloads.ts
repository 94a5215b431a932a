// Rollout progress of the workload kinds, as `kubectl rollout status` reads it.
import type { Obj } from "../store";

export interface Progress {
  done: number;
  total: number;
  text: string;
}

export function progress(kind: string, o: Obj): Progress {
  const s = o.status || {};
  switch (kind) {
    case "Deployment":
    case "StatefulSet": {
      const want = o.spec?.replicas ?? 1;
      const updated = s.updatedReplicas || 0;
      const ready = s.readyReplicas || 0;
      return { done: Math.min(updated, ready), total: want, text: `${ready}/${want} ready, ${updated} up to date` };
    }
    case "DaemonSet": {
      const want = s.desiredNumberScheduled || 0;
      return { done: Math.min(s.updatedNumberScheduled || 0, s.numberReady || 0), total: want,
        text: `${s.numberReady || 0}/${want} ready, ${s.updatedNumberScheduled || 0} up to date` };
    }
    case "Job": {
      const want = o.spec?.completions ?? 1;
      return { done: s.succeeded || 0, total: want,
        text: `${s.succeeded || 0}/${want} succeeded${s.active ? `, ${s.active} active` : ""}${s.failed ? `, ${s.failed} failed` : ""}` };
    }
    default:
      return { done: 0, total: 0, text: "" };
  }
}

// a Deployment's revision history: its ReplicaSets by revision, newest first
export function revisions(deployment: Obj, replicasets: Obj[]): Obj[] {
  const uid = deployment.metadata?.uid;
  return replicasets
    .filter((rs) => (rs.metadata?.ownerReferences || []).some((r: Obj) => r.uid === uid && r.controller))
    .sort((a, b) => revision(b) - revision(a));
}

export function revision(rs: Obj): number {
  return Number(rs.metadata?.annotations?.["deployment.kubernetes.io/revision"] || 0);
}

export function images(template: Obj | undefined): string {
  return (template?.spec?.containers || []).map((c: Obj) => c.image).join(", ");
}
