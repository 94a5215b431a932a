// Events as the dashboard reads them (core/v1). The scheduler writes events.k8s.io/v1 Events, which
// come back here with a series instead of count and lastTimestamp: kubectl describe reads both.
import type { Obj } from "../store";

export function lastSeen(e: Obj): string {
  return e.series?.lastObservedTime || e.lastTimestamp || e.eventTime || e.metadata?.creationTimestamp;
}

export function eventCount(e: Obj): number {
  return e.series?.count || e.count || 1;
}
