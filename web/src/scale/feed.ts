// A list+watch that hands each watch event to its sink as it comes, for views that keep their
// own compact state (the scale view's typed arrays) instead of the store's object maps: a 410
// re-lists (the sink is reset), an ended stream watches again from the last resourceVersion, a
// failure retries with backoff. Over the dashboard's one watch WebSocket (watchmux.ts).
import { ApiError, CSRF_HEADERS, errorFrom, withQuery } from "../api";
import type { Obj } from "../store";
import { mux } from "../watchmux";

export interface Sink {
  reset(items: Obj[]): void; // a fresh list: everything before it is gone
  event(type: "ADDED" | "MODIFIED" | "DELETED", obj: Obj): void;
  error(e: ApiError | null): void;
}

const BACKOFF_MIN = 500;
const BACKOFF_MAX = 10_000;

export class Feed {
  private rv = "";
  private stopped = false;
  private watchId = 0;
  private backoff = BACKOFF_MIN;

  constructor(private readonly path: string, private readonly sink: Sink) {}

  start(): void {
    void this.loop();
  }

  stop(): void {
    this.stopped = true;
    if (this.watchId) mux.stop(this.watchId);
  }

  private async loop(): Promise<void> {
    let relist = true;
    while (!this.stopped) {
      try {
        if (relist) await this.list();
        relist = await this.watch();
        this.backoff = BACKOFF_MIN;
        continue;
      } catch (e) {
        if (this.stopped) return;
        if (e instanceof ApiError && e.code !== 503) {
          this.sink.error(e);
          relist = true;
        }
      }
      await new Promise((r) => setTimeout(r, this.backoff));
      this.backoff = Math.min(this.backoff * 2, BACKOFF_MAX);
    }
  }

  private async list(): Promise<void> {
    const res = await fetch(this.path, { headers: { ...CSRF_HEADERS, Accept: "application/json" } });
    if (!res.ok) throw await errorFrom(res);
    const body = await res.json();
    if (this.stopped) return;
    this.rv = body.metadata?.resourceVersion || "";
    this.sink.error(null);
    this.sink.reset(body.items || []);
  }

  // resolves true when the caller must re-list (410 Gone)
  private watch(): Promise<boolean> {
    const url = withQuery(this.path, { watch: "1", allowWatchBookmarks: "true", resourceVersion: this.rv });
    return new Promise((resolve, reject) => {
      this.watchId = mux.watch(url, {
        event: (ev) => {
          const o = ev.object || {};
          if (ev.type === "ERROR") {
            mux.stop(this.watchId);
            if (o.code === 410) resolve(true);
            else reject(new ApiError(o.code || 500, o.reason || "", o.message || "watch error"));
            return;
          }
          if (o.metadata?.resourceVersion) this.rv = o.metadata.resourceVersion;
          if (ev.type !== "BOOKMARK") this.sink.event(ev.type, o);
        },
        end: (err, status) => {
          if (status === 410 || err?.code === 410) resolve(true);
          else if (err) reject(err);
          else resolve(false);
        },
      });
    });
  }
}
