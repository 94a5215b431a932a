// PersistentVolumeClaim facts as `kubectl get pvc` shows them, which pods use a claim, and why a
// Pending claim waits (the latest event the binder or the provisioner wrote about it).
import type { Obj } from "../store";
import { lastSeen } from "./events";

const MODES: Record<string, string> = {
  ReadWriteOnce: "RWO", ReadOnlyMany: "ROX", ReadWriteMany: "RWX", ReadWriteOncePod: "RWOP",
};

export function accessModes(modes: string[] | undefined): string {
  return (modes || []).map((m) => MODES[m] || m).join(",");
}

export function claimStatus(pvc: Obj): string {
  if (pvc.metadata?.deletionTimestamp) return "Terminating";
  return pvc.status?.phase || "Pending";
}

// the claims each pod uses, keyed "namespace/claim": persistentVolumeClaim volumes, and generic
// ephemeral volumes (their claim is named "<pod>-<volume>")
export function podsByClaim(pods: Obj[]): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const p of pods) {
    const ns = p.metadata.namespace;
    for (const v of p.spec?.volumes || []) {
      const claim = v.persistentVolumeClaim?.claimName || (v.ephemeral ? `${p.metadata.name}-${v.name}` : "");
      if (!claim) continue;
      const k = `${ns}/${claim}`;
      out.set(k, [...(out.get(k) || []), p.metadata.name]);
    }
  }
  return out;
}

function eventTime(e: Obj): number {
  return Date.parse(lastSeen(e) || "") || 0;
}

// the newest event about each claim, keyed "namespace/claim"
export function latestEvents(events: Obj[]): Map<string, Obj> {
  const out = new Map<string, Obj>();
  for (const e of events) {
    const io = e.involvedObject || {};
    if (io.kind !== "PersistentVolumeClaim") continue;
    const k = `${io.namespace || e.metadata.namespace}/${io.name}`;
    const had = out.get(k);
    if (!had || eventTime(e) >= eventTime(had)) out.set(k, e);
  }
  return out;
}

export const DEFAULT_CLASS = "storageclass.kubernetes.io/is-default-class";
