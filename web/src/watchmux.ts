// The page's end of /dashboard/watch: every watch of the store over one WebSocket, because a
// browser gives a host only 6 HTTP/1.1 connections and each open watch would hold one.
import { ApiError } from "./api";

interface Handlers {
  event: (ev: any) => void;
  end: (err: ApiError | null, status?: number) => void;
}

const RECONNECT_MIN = 500;
const RECONNECT_MAX = 10_000;

class WatchMux {
  private ws: WebSocket | null = null;
  private open = false;
  private next = 1;
  private handlers = new Map<number, Handlers>();
  private queued = new Map<number, string>();
  private backoff = RECONNECT_MIN;

  watch(path: string, h: Handlers): number {
    const id = this.next++;
    this.handlers.set(id, h);
    const msg = JSON.stringify({ id, path });
    if (this.open && this.ws) this.ws.send(msg);
    else {
      this.queued.set(id, msg);
      this.connect();
    }
    return id;
  }

  stop(id: number): void {
    this.handlers.delete(id);
    this.queued.delete(id);
    if (this.open && this.ws) this.ws.send(JSON.stringify({ id, stop: true }));
  }

  private connect(): void {
    if (this.ws) return;
    const ws = new WebSocket(`${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/dashboard/watch`);
    this.ws = ws;
    ws.onopen = () => {
      this.open = true;
      this.backoff = RECONNECT_MIN;
      for (const msg of this.queued.values()) ws.send(msg);
      this.queued.clear();
    };
    ws.onmessage = (m) => {
      const data = JSON.parse(m.data as string);
      const h = this.handlers.get(data.id);
      if (!h) return;
      if (data.end) {
        this.handlers.delete(data.id);
        const e = data.error;
        h.end(e ? new ApiError(e.code || data.status || 500, e.reason || "", e.message || "watch failed") : null,
          data.status);
      } else h.event(data.event);
    };
    ws.onclose = () => {
      this.ws = null;
      this.open = false;
      // every open watch ends; their collections watch again (queued until the socket is back)
      const ended = [...this.handlers.values()];
      this.handlers.clear();
      this.queued.clear();
      for (const h of ended) h.end(new ApiError(503, "ServiceUnavailable", "the dashboard's watch stream closed"));
      this.backoff = Math.min(this.backoff * 2, RECONNECT_MAX);
    };
  }

  // how long a collection waits after its watch failed for the socket's sake
  get delay(): number {
    return this.backoff;
  }
}

export const mux = new WatchMux();
