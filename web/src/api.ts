// Calls to the API through the dashboard's proxy. Every call carries the CSRF header the
// dashboard requires of state-changing requests; errors keep the API's Status (its message is
// what the user sees, e.g. RBAC's "... is forbidden: User ... cannot delete ...").

export const CSRF_HEADERS = { "X-Pyk8s-Dashboard": "1" };

export interface Status {
  kind?: string;
  message?: string;
  reason?: string;
  code?: number;
}

export class ApiError extends Error {
  code: number;
  reason: string;
  constructor(code: number, reason: string, message: string) {
    super(message);
    this.code = code;
    this.reason = reason;
  }
}

export async function errorFrom(res: Response): Promise<ApiError> {
  const text = await res.text();
  try {
    const s = JSON.parse(text) as Status;
    if (s && s.kind === "Status") return new ApiError(s.code || res.status, s.reason || "", s.message || text);
  } catch {
    // not JSON: the text itself
  }
  return new ApiError(res.status, res.statusText, text || `${res.status} ${res.statusText}`);
}

export interface CallOptions {
  body?: unknown;
  contentType?: string;
  query?: Record<string, string | undefined>;
  signal?: AbortSignal;
}

export function withQuery(path: string, query?: Record<string, string | undefined>): string {
  if (!query) return path;
  const q = Object.entries(query).filter(([, v]) => v !== undefined && v !== "") as [string, string][];
  if (!q.length) return path;
  return path + (path.includes("?") ? "&" : "?") + new URLSearchParams(q).toString();
}

export async function call<T = any>(method: string, path: string, opts: CallOptions = {}): Promise<T> {
  const headers: Record<string, string> = { ...CSRF_HEADERS, Accept: "application/json" };
  let body: string | undefined;
  if (opts.body !== undefined) {
    headers["Content-Type"] = opts.contentType || "application/json";
    body = typeof opts.body === "string" ? opts.body : JSON.stringify(opts.body);
  }
  const send = () => fetch(withQuery(path, opts.query), { method, headers, body, signal: opts.signal,
    credentials: "same-origin" });
  let res: Response;
  try {
    res = await send();
  } catch (e) {
    // Chromium drops open connections when any host interface changes (ERR_NETWORK_CHANGED; a
    // node's pod veths do it): one more try for the methods that are safe to repeat
    if (opts.signal?.aborted || !["GET", "PUT", "PATCH"].includes(method)) throw e;
    res = await send();
  }
  if (!res.ok) throw await errorFrom(res);
  const text = await res.text();
  return (text ? JSON.parse(text) : {}) as T;
}

export const get = <T = any>(path: string, opts?: CallOptions) => call<T>("GET", path, opts);

export interface ResourceRef {
  group: string; // "" for the core group
  version: string;
  resource: string;
  namespace?: string;
  name?: string;
  subresource?: string;
}

export function resourcePath(r: ResourceRef): string {
  let p = r.group ? `/apis/${r.group}/${r.version}` : `/api/${r.version}`;
  if (r.namespace) p += `/namespaces/${encodeURIComponent(r.namespace)}`;
  p += `/${r.resource}`;
  if (r.name) p += `/${encodeURIComponent(r.name)}`;
  if (r.subresource) p += `/${r.subresource}`;
  return p;
}

// resources the pages name, as the API's discovery would give them
export const RES = {
  nodes: { group: "", version: "v1", resource: "nodes" },
  namespaces: { group: "", version: "v1", resource: "namespaces" },
  pods: { group: "", version: "v1", resource: "pods" },
  events: { group: "", version: "v1", resource: "events" },
  services: { group: "", version: "v1", resource: "services" },
  deployments: { group: "apps", version: "v1", resource: "deployments" },
  replicasets: { group: "apps", version: "v1", resource: "replicasets" },
  statefulsets: { group: "apps", version: "v1", resource: "statefulsets" },
  daemonsets: { group: "apps", version: "v1", resource: "daemonsets" },
  controllerrevisions: { group: "apps", version: "v1", resource: "controllerrevisions" },
  jobs: { group: "batch", version: "v1", resource: "jobs" },
  cronjobs: { group: "batch", version: "v1", resource: "cronjobs" },
} satisfies Record<string, ResourceRef>;

// the resource of a kind the pages link to (YAML view of any object they show)
export const KIND_RESOURCES: Record<string, ResourceRef> = {
  Node: RES.nodes, Namespace: RES.namespaces, Pod: RES.pods, Event: RES.events, Service: RES.services,
  Deployment: RES.deployments, ReplicaSet: RES.replicasets, StatefulSet: RES.statefulsets,
  DaemonSet: RES.daemonsets, Job: RES.jobs, CronJob: RES.cronjobs,
};
