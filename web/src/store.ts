// A shared, watch-backed cache of API collections: list, then watch (over one WebSocket for all,
// watchmux.ts) from the list's
// resourceVersion; a 410 Gone (the watch's history was compacted) re-lists; a dropped stream
// reconnects from the last resourceVersion seen, with backoff. No polling loops. Several
// components asking for the same collection share one list+watch.
import { useEffect, useState } from "preact/hooks";
import { ApiError, CSRF_HEADERS, errorFrom, withQuery } from "./api";
import { mux } from "./watchmux";

export type Obj = Record<string, any>;

export function objKey(o: Obj): string {
  const m = o.metadata || {};
  return m.namespace ? `${m.namespace}/${m.name}` : m.name;
}

const BACKOFF_MIN = 500;
const BACKOFF_MAX = 10_000;
const LIST_ANSWER_MS = 10_000;
// changes reach the components at most this often (a burst of events renders once)
const NOTIFY_MS = 100;

export class Collection {
  readonly path: string;
  items = new Map<string, Obj>();
  loaded = false;
  error: ApiError | null = null;
  version = 0; // bumped on every change
  private rv = "";
  private listeners = new Set<() => void>();
  private abort: AbortController | null = null;
  private backoff = BACKOFF_MIN;
  private listWait = LIST_ANSWER_MS;
  private stopped = false;
  private notifyTimer: ReturnType<typeof setTimeout> | null = null;
  private snapshot: Obj[] = [];
  private snapshotVersion = -1;

  constructor(path: string) {
    this.path = path;
  }

  subscribe(fn: () => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  get size(): number {
    return this.listeners.size;
  }

  list(): Obj[] {
    if (this.snapshotVersion !== this.version) {
      this.snapshot = Array.from(this.items.values());
      this.snapshotVersion = this.version;
    }
    return this.snapshot;
  }

  start(): void {
    this.stopped = false;
    void this.run();
  }

  stop(): void {
    this.stopped = true;
    this.abort?.abort();
    if (this.notifyTimer) clearTimeout(this.notifyTimer);
  }

  private changed(now = false): void {
    this.version++;
    if (now) {
      this.flush();
      return;
    }
    if (this.notifyTimer) return;
    this.notifyTimer = setTimeout(() => this.flush(), NOTIFY_MS);
  }

  private flush(): void {
    if (this.notifyTimer) clearTimeout(this.notifyTimer);
    this.notifyTimer = null;
    for (const fn of this.listeners) fn();
  }

  private async run(): Promise<void> {
    let needList = true;
    while (!this.stopped) {
      this.abort = new AbortController();
      try {
        if (needList) await this.relist(this.abort.signal);
        needList = await this.watch(this.abort.signal);
        this.backoff = BACKOFF_MIN;
        continue; // the stream ended normally (the server's watch timeout): watch again from rv
      } catch (e) {
        if (this.stopped) return;
        if (e instanceof ApiError && e.code !== 503) { // 503: the watch socket reconnects; not the API's answer
          this.error = e;
          if (e.code === 410) needList = true;
          else if (e.code === 401 || e.code === 403 || e.code === 404) {
            this.loaded = true;
            needList = true;
          }
          this.changed(true);
        }
      }
      await new Promise((r) => setTimeout(r, this.backoff));
      this.backoff = Math.min(this.backoff * 2, BACKOFF_MAX);
    }
  }

  private async relist(signal: AbortSignal): Promise<void> {
    // a list whose answer has not begun in listWait is given up and asked again (run()'s backoff): one
    // request stuck on the way must not leave the page loading for good. Each give-up doubles the wait,
    // so a server slow to answer a large list is still heard; the body may take longer.
    const ctl = new AbortController();
    const stop = () => ctl.abort();
    signal.addEventListener("abort", stop);
    let timedOut = false;
    const timer = setTimeout(() => { timedOut = true; stop(); }, this.listWait);
    let res: Response;
    try {
      res = await fetch(this.path, { headers: { ...CSRF_HEADERS, Accept: "application/json" }, signal: ctl.signal });
    } catch (e) {
      if (timedOut) this.listWait *= 2;
      throw e;
    } finally {
      clearTimeout(timer);
    }
    this.listWait = LIST_ANSWER_MS;
    if (!res.ok) throw await errorFrom(res);
    const body = await res.json();
    this.items = new Map();
    for (const o of body.items || []) {
      // lists leave out each item's kind; the pages' links want it
      if (!o.kind && body.kind?.endsWith("List")) o.kind = body.kind.slice(0, -4);
      this.items.set(objKey(o), o);
    }
    this.rv = body.metadata?.resourceVersion || "";
    this.loaded = true;
    this.error = null;
    this.changed(true);
  }

  // true when the caller must re-list (410 Gone); over the dashboard's watch WebSocket (watchmux.ts)
  private watch(signal: AbortSignal): Promise<boolean> {
    const url = withQuery(this.path, { watch: "1", allowWatchBookmarks: "true", resourceVersion: this.rv });
    return new Promise((resolve, reject) => {
      let settled = false;
      const finish = (f: () => void) => {
        if (settled) return;
        settled = true;
        signal.removeEventListener("abort", onAbort);
        f();
      };
      const id = mux.watch(url, {
        event: (ev) => {
          try {
            if (this.apply(ev)) {
              mux.stop(id);
              finish(() => resolve(true));
            }
          } catch (e) {
            mux.stop(id);
            finish(() => reject(e));
          }
        },
        end: (err, status) => finish(() => {
          if (status === 410 || err?.code === 410) resolve(true);
          else if (err) reject(err);
          else resolve(false);
        }),
      });
      const onAbort = () => {
        mux.stop(id);
        finish(() => reject(new DOMException("stopped", "AbortError")));
      };
      signal.addEventListener("abort", onAbort);
    });
  }

  // one watch event; true when the watch must re-list
  private apply(ev: { type: string; object: Obj }): boolean {
    const o = ev.object || {};
    if (ev.type === "ERROR") {
      if (o.code === 410) return true;
      throw new ApiError(o.code || 500, o.reason || "", o.message || "watch error");
    }
    if (o.metadata?.resourceVersion) this.rv = o.metadata.resourceVersion;
    if (ev.type === "BOOKMARK") return false;
    this.backoff = BACKOFF_MIN;
    if (ev.type === "DELETED") this.items.delete(objKey(o));
    else this.items.set(objKey(o), o);
    this.changed();
    return false;
  }
}

const collections = new Map<string, Collection>();

function acquire(path: string): Collection {
  let c = collections.get(path);
  if (!c) {
    c = new Collection(path);
    collections.set(path, c);
    c.start();
  }
  return c;
}

function release(c: Collection): void {
  // kept a moment: moving between pages that show the same collection does not re-list
  setTimeout(() => {
    if (c.size === 0 && collections.get(c.path) === c) {
      c.stop();
      collections.delete(c.path);
    }
  }, 5000);
}

export interface ListState {
  items: Obj[];
  loaded: boolean;
  error: ApiError | null;
}

// The objects of a collection path (e.g. "/api/v1/namespaces/default/pods"), live; null: none.
export function useList(path: string | null): ListState {
  const [, setTick] = useState(0);
  const [coll, setColl] = useState<Collection | null>(null);
  useEffect(() => {
    if (!path) {
      setColl(null);
      return;
    }
    const c = acquire(path);
    setColl(c);
    const unsub = c.subscribe(() => setTick((t) => t + 1));
    return () => {
      unsub();
      release(c);
    };
  }, [path]);
  if (!coll || coll.path !== path) return { items: [], loaded: false, error: null };
  return { items: coll.list(), loaded: coll.loaded, error: coll.error };
}
