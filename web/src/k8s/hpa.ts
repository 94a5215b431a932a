// HorizontalPodAutoscaler (autoscaling/v2) facts: each metric's current value against its target
// as `kubectl get hpa` prints them ("cpu: 40%/50%", "<unknown>" before the first reading), the
// same as numbers for the history chart, and the history itself: one sample per status change
// seen over the watch, kept in sessionStorage (this tab's session: a reload keeps it, closing the
// tab ends it).
import type { Obj } from "../store";
import { formatBytes, formatCPU, parseQuantity } from "./quantity";

export interface MetricReading {
  name: string; // "cpu", "memory", "requests-per-second"
  text: string; // as kubectl's TARGETS column
  current: number | null;
  target: number | null;
  unit: "%" | "cpu" | "bytes" | "";
}

const UNKNOWN = "<unknown>";

function q(v: string | number | undefined): number | null {
  return v === undefined || v === null ? null : parseQuantity(v);
}

function unitOf(resource: string): MetricReading["unit"] {
  return resource === "cpu" ? "cpu" : resource === "memory" || resource.endsWith("storage") ? "bytes" : "";
}

// one reading per spec metric; the status's currentMetrics are matched by position, as kubectl does
export function readings(hpa: Obj): MetricReading[] {
  const current: Obj[] = hpa.status?.currentMetrics || [];
  return (hpa.spec?.metrics || []).map((m: Obj, i: number): MetricReading => {
    const st: Obj | undefined = current[i];
    switch (m.type) {
      case "Resource":
      case "ContainerResource": {
        const key = m.type === "Resource" ? "resource" : "containerResource";
        const spec = m[key] || {};
        const cur = st?.[key]?.current;
        const name = spec.name + (m.type === "ContainerResource" ? ` (${spec.container})` : "");
        if (spec.target?.averageValue !== undefined) {
          const c = cur?.averageValue;
          return { name, text: `${spec.name}: ${c ?? UNKNOWN}/${spec.target.averageValue}`, current: q(c),
            target: q(spec.target.averageValue), unit: unitOf(spec.name) };
        }
        const c = cur?.averageUtilization;
        const t = spec.target?.averageUtilization;
        return { name, text: `${spec.name}: ${c !== undefined ? `${c}%` : UNKNOWN}/${t !== undefined ? `${t}%` : "<auto>"}`,
          current: c ?? null, target: t ?? null, unit: "%" };
      }
      case "Pods": {
        const c = st?.pods?.current?.averageValue;
        const t = m.pods?.target?.averageValue;
        return { name: m.pods?.metric?.name || "pods", text: `${c ?? UNKNOWN}/${t}`, current: q(c), target: q(t), unit: "" };
      }
      case "Object":
      case "External": {
        const key = m.type === "Object" ? "object" : "external";
        const spec = m[key] || {};
        const cur = st?.[key]?.current;
        const avg = spec.target?.averageValue !== undefined;
        const c = avg ? cur?.averageValue : cur?.value;
        const t = avg ? spec.target.averageValue : spec.target?.value;
        return { name: spec.metric?.name || key, text: `${c ?? UNKNOWN}/${t}${avg ? " (avg)" : ""}`, current: q(c),
          target: q(t), unit: "" };
      }
      default:
        return { name: m.type || "", text: "<unknown type>", current: null, target: null, unit: "" };
    }
  });
}

export function formatValue(v: number, unit: MetricReading["unit"]): string {
  if (unit === "%") return `${Math.round(v)}%`;
  if (unit === "cpu") return formatCPU(v);
  if (unit === "bytes") return formatBytes(v);
  return Number.isInteger(v) ? String(v) : v.toPrecision(3);
}

export function hpaRef(hpa: Obj): string {
  const r = hpa.spec?.scaleTargetRef || {};
  return `${r.kind}/${r.name}`;
}

export interface Sample {
  t: number; // ms since the epoch, when the page saw the change
  rv: string; // the HPA's resourceVersion (one sample per version)
  replicas: number; // status.currentReplicas
  desired: number;
  values: (number | null)[]; // per spec metric
  targets: (number | null)[];
  usage?: number; // the target's pods' mean cpu usage in cores (metrics.k8s.io), where readable
}

const KEY = "pyk8s-dashboard-hpa-history";
export const MAX_SAMPLES = 500;

function load(): Record<string, Sample[]> {
  try {
    return JSON.parse(sessionStorage.getItem(KEY) || "{}") as Record<string, Sample[]>;
  } catch {
    return {};
  }
}

const history: Record<string, Sample[]> = load();

function save(): void {
  try {
    sessionStorage.setItem(KEY, JSON.stringify(history));
  } catch {
    // storage full or refused: the history lives on in memory until the page goes
  }
}

export function samples(uid: string): Sample[] {
  return history[uid] || [];
}

// a sample of the HPA's status if this resourceVersion is new to the history; true if one was added
export function record(hpa: Obj, now = Date.now()): boolean {
  const uid = hpa.metadata?.uid;
  const rv = hpa.metadata?.resourceVersion || "";
  if (!uid) return false;
  const list = history[uid] || (history[uid] = []);
  if (list.length && list[list.length - 1].rv === rv) return false;
  const r = readings(hpa);
  list.push({ t: now, rv, replicas: hpa.status?.currentReplicas ?? 0, desired: hpa.status?.desiredReplicas ?? 0,
    values: r.map((x) => x.current), targets: r.map((x) => x.target) });
  if (list.length > MAX_SAMPLES) list.splice(0, list.length - MAX_SAMPLES);
  save();
  return true;
}

// the pods' usage read after a sample was taken (metrics.k8s.io answers later than the watch)
export function addUsage(uid: string, rv: string, cores: number): void {
  const s = (history[uid] || []).find((x) => x.rv === rv);
  if (!s) return;
  s.usage = cores;
  save();
}
