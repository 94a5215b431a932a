// Small shared pieces: ages, condition badges, links to an object's YAML.
import type { ComponentChildren } from "preact";
import { KIND_RESOURCES } from "../api";
import { href } from "../router";
import type { Obj } from "../store";

export function age(ts?: string): string {
  if (!ts) return "";
  const s = Math.max(0, Math.floor((Date.now() - Date.parse(ts)) / 1000));
  if (s < 120) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 120) return `${m}m`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h}h`;
  return `${Math.floor(h / 24)}d`;
}

export function ageSeconds(ts?: string): number {
  return ts ? (Date.now() - Date.parse(ts)) / 1000 : 0;
}

export function Badge({ ok, children, title }: { ok: boolean | null; children: ComponentChildren; title?: string }) {
  return <span class={`badge ${ok === null ? "neutral" : ok ? "ok" : "bad"}`} title={title}>{children}</span>;
}

// the YAML page of an object (group "_" for the core group, namespace "_" for cluster scope)
export function yamlHref(o: Obj): string | null {
  const r = KIND_RESOURCES[o.kind];
  if (!r) return null;
  return href("/yaml/:group/:version/:resource/:namespace/:name", {
    group: r.group || "_", version: r.version, resource: r.resource, namespace: o.metadata?.namespace || "_",
    name: o.metadata?.name,
  });
}

export function Loading({ loaded, error }: { loaded: boolean; error: { message: string } | null }) {
  if (error) return <p class="error-text" role="alert">{error.message}</p>;
  if (!loaded) return <p class="muted">Loading…</p>;
  return null;
}
