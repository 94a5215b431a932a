// The scale view's state: one slot per node in typed arrays (allocatable and requested per
// metric, Ready, dirty flags), each pod reduced to what it adds to its node. Events only update
// numbers and mark the touched nodes dirty; the canvas redraws those cells alone.
import { podRequests } from "../k8s/pods";
import { parseQuantity } from "../k8s/quantity";
import type { Obj } from "../store";
import { podGpuMem, RESOURCE_MEM } from "../k8s/gpushare";

export const METRICS = [
  { id: "cpu", title: "CPU requested" },
  { id: "memory", title: "Memory requested" },
  { id: "pods", title: "Pods" },
  { id: "gpu", title: "GPU memory (gpushare)" },
] as const;
export const M = METRICS.length;

export const enum Phase { Pending, Running, Other }

interface PodRec {
  slot: number; // -1: not bound
  cpu: number;
  mem: number;
  gpu: number;
  phase: Phase;
  counts: boolean; // holds resources on its node (bound, not finished)
}

export class ScaleModel {
  n = 0; // slots in use
  names: string[] = [];
  private index = new Map<string, number>();
  present = new Uint8Array(0); // a Node object exists for the slot
  ready = new Uint8Array(0);
  alloc = new Float64Array(0); // slot * M + metric
  used = new Float64Array(0);
  private dirty = new Uint8Array(0);
  dirtyList: number[] = [];
  allDirty = true;
  private pods = new Map<string, PodRec>();
  readyNodes = 0;
  nodes = 0;
  pending = 0;
  running = 0;

  private grow(min: number): void {
    let cap = Math.max(this.present.length, 64);
    while (cap < min) cap *= 2;
    if (cap === this.present.length) return;
    const u8 = (a: Uint8Array) => { const b = new Uint8Array(cap); b.set(a); return b; };
    const f64 = (a: Float64Array) => { const b = new Float64Array(cap * M); b.set(a); return b; };
    this.present = u8(this.present);
    this.ready = u8(this.ready);
    this.dirty = u8(this.dirty);
    this.alloc = f64(this.alloc);
    this.used = f64(this.used);
  }

  slot(name: string): number {
    let i = this.index.get(name);
    if (i === undefined) {
      i = this.n++;
      this.grow(this.n);
      this.index.set(name, i);
      this.names.push(name);
      this.allDirty = true; // the layout may change
    }
    return i;
  }

  private touch(i: number): void {
    if (!this.dirty[i]) {
      this.dirty[i] = 1;
      this.dirtyList.push(i);
    }
  }

  takeDirty(): number[] {
    const d = this.dirtyList;
    for (const i of d) this.dirty[i] = 0;
    this.dirtyList = [];
    return d;
  }

  resetNodes(items: Obj[]): void {
    for (let i = 0; i < this.n; i++) if (this.present[i]) this.removeNodeAt(i);
    for (const o of items) this.setNode(o);
    this.allDirty = true;
  }

  setNode(o: Obj): void {
    const i = this.slot(o.metadata.name);
    if (this.present[i]) this.removeNodeAt(i);
    const a = o.status?.allocatable || {};
    const ready = (o.status?.conditions || []).some((c: Obj) => c.type === "Ready" && c.status === "True") ? 1 : 0;
    this.present[i] = 1;
    this.ready[i] = ready;
    this.nodes++;
    this.readyNodes += ready;
    const b = i * M;
    this.alloc[b] = parseQuantity(a.cpu);
    this.alloc[b + 1] = parseQuantity(a.memory);
    this.alloc[b + 2] = parseQuantity(a.pods);
    this.alloc[b + 3] = parseQuantity(a[RESOURCE_MEM]);
    this.touch(i);
  }

  deleteNode(o: Obj): void {
    const i = this.index.get(o.metadata.name);
    if (i !== undefined && this.present[i]) this.removeNodeAt(i);
  }

  private removeNodeAt(i: number): void {
    this.present[i] = 0;
    this.nodes--;
    this.readyNodes -= this.ready[i];
    this.ready[i] = 0;
    this.touch(i);
  }

  resetPods(items: Obj[]): void {
    for (const rec of this.pods.values()) this.account(rec, -1);
    this.pods.clear();
    for (const o of items) this.setPod(o);
  }

  setPod(o: Obj): void {
    const key = `${o.metadata.namespace}/${o.metadata.name}`;
    const old = this.pods.get(key);
    if (old) this.account(old, -1);
    const phase = o.status?.phase;
    const node = o.spec?.nodeName;
    const finished = phase === "Succeeded" || phase === "Failed";
    const req = podRequests(o);
    const rec: PodRec = {
      slot: node ? this.slot(node) : -1,
      cpu: req.cpu || 0,
      mem: req.memory || 0,
      gpu: podGpuMem(o),
      phase: phase === "Running" ? Phase.Running : !phase || phase === "Pending" ? Phase.Pending : Phase.Other,
      counts: Boolean(node) && !finished,
    };
    this.pods.set(key, rec);
    this.account(rec, 1);
  }

  deletePod(o: Obj): void {
    const key = `${o.metadata.namespace}/${o.metadata.name}`;
    const old = this.pods.get(key);
    if (old) {
      this.account(old, -1);
      this.pods.delete(key);
    }
  }

  private account(rec: PodRec, sign: 1 | -1): void {
    if (rec.phase === Phase.Pending) this.pending += sign;
    else if (rec.phase === Phase.Running) this.running += sign;
    if (!rec.counts || rec.slot < 0) return;
    const b = rec.slot * M;
    this.used[b] += sign * rec.cpu;
    this.used[b + 1] += sign * rec.mem;
    this.used[b + 2] += sign;
    this.used[b + 3] += sign * rec.gpu;
    this.touch(rec.slot);
  }

  // requested / allocatable of a metric; -1 when the node offers none of it
  ratio(i: number, metric: number): number {
    const a = this.alloc[i * M + metric];
    return a > 0 ? this.used[i * M + metric] / a : -1;
  }
}
