// Scale view: every node as one cell of a canvas heatmap (colour = requested / allocatable of the
// chosen resource), pickable by mouse and keyboard, with Ready/NotReady node and Pending/Running
// pod counts. Built for thousands of nodes: state lives in typed arrays (scale/model.ts), watch
// events are applied in batches once per animation frame and only the cells they touched are
// redrawn; no DOM element per node. Timings (for bench/dashboard.py) and the layout (for tests)
// go to window.pyk8sScale.
import { useEffect, useRef, useState } from "preact/hooks";
import { RES, resourcePath } from "../api";
import { formatBytes, formatCPU } from "../k8s/quantity";
import type { PageProps } from "../routes";
import { Feed, type Sink } from "../scale/feed";
import { M, METRICS, ScaleModel } from "../scale/model";
import type { Obj } from "../store";
import "./scale.css";

// light to dark (YlOrRd-like): fuller is more pressing; 10 steps
const PALETTE = ["#ffffcc", "#ffeda0", "#fed976", "#feb24c", "#fd8d3c", "#fc4e2a", "#e31a1c", "#bd0026",
  "#800026", "#4d0019"];
const NOT_READY = "#6e7781"; // grey, crossed out where cells are large enough: apart from the reds
const NONE = "#d0d7de"; // the node offers none of the resource
const BG = "#ffffff";
const SELECTED = "#0b5cad";

export interface ScaleTimings {
  nodesListed: number; // performance.now() when the node list arrived
  firstRender: number; // when all of its cells were first drawn
  nodes: number; // cells in that first render
  redraws: number;
  redrawTimes: number[]; // performance.now() of each redraw (the last 20,000)
  events: number; // watch events applied
  batchTimes: number[]; // performance.now() of each batch of watch events applied (the last 20,000)
  longestFrame: number; // ms the longest batch took (apply + draw): the page's own share of a gap
  cell: number; // the layout: cell size in CSS px, cells per row
  cols: number;
}

declare global {
  interface Window { pyk8sScale?: ScaleTimings }
}

function colour(m: ScaleModel, i: number, metric: number): string {
  if (!m.present[i]) return BG;
  if (!m.ready[i]) return NOT_READY;
  const r = m.ratio(i, metric);
  if (r < 0) return NONE;
  return PALETTE[Math.min(PALETTE.length - 1, Math.max(0, Math.floor(r * PALETTE.length)))];
}

interface Layout { cell: number; cols: number; rows: number; gap: number }

function layout(width: number, n: number): Layout {
  // cells as large as fit about 640 px of height, 3 to 28 px
  const cell = Math.max(3, Math.min(28, Math.floor(Math.sqrt((width * 640) / Math.max(n, 1)))));
  const cols = Math.max(1, Math.floor(width / cell));
  return { cell, cols, rows: Math.ceil(n / cols), gap: cell >= 6 ? 1 : 0 };
}

function describe(m: ScaleModel, i: number): string {
  if (i < 0 || i >= m.n) return "";
  const b = i * M;
  const cell = (k: number, fmt: (x: number) => string) =>
    m.alloc[b + k] > 0 ? `${fmt(m.used[b + k])} / ${fmt(m.alloc[b + k])}` : "none";
  if (!m.present[i]) return `${m.names[i]}: no Node object`;
  return `${m.names[i]}: ${m.ready[i] ? "Ready" : "NotReady"}; CPU ${cell(0, formatCPU)}; memory ` +
    `${cell(1, formatBytes)}; pods ${cell(2, String)}; GPU memory ${cell(3, (x) => `${x} GiB`)}`;
}

export function Scale(_: PageProps) {
  const canvasRef = useRef<HTMLCanvasElement>(null);
  const countsRef = useRef<HTMLParagraphElement>(null);
  const [metric, setMetric] = useState(0);
  const [picked, setPicked] = useState("");
  const [error, setError] = useState("");
  const state = useRef({ metric: 0, selected: -1, redrawAll: null as null | (() => void),
    select: null as null | ((i: number) => void), model: null as ScaleModel | null, lay: null as Layout | null });

  useEffect(() => {
    const canvas = canvasRef.current!;
    const ctx = canvas.getContext("2d", { alpha: false })!;
    const model = new ScaleModel();
    const st = state.current;
    st.model = model;
    const t: ScaleTimings = { nodesListed: 0, firstRender: 0, nodes: 0, redraws: 0, redrawTimes: [], events: 0, batchTimes: [],
      longestFrame: 0, cell: 0, cols: 0 };
    window.pyk8sScale = t;
    const queue: [string, Obj, number][] = []; // type, object, feed (0 nodes, 1 pods)
    let frame = 0;
    let lay: Layout | null = null;
    let podFeed: Feed | null = null;

    const cellRect = (i: number): [number, number, number] => {
      const l = lay!;
      return [(i % l.cols) * l.cell, Math.floor(i / l.cols) * l.cell, l.cell - l.gap];
    };
    const drawCell = (i: number) => {
      const [x, y, s] = cellRect(i);
      ctx.fillStyle = colour(model, i, st.metric);
      ctx.fillRect(x, y, s, s);
      if (model.present[i] && !model.ready[i] && s >= 6) {
        ctx.strokeStyle = BG;
        ctx.lineWidth = 1;
        ctx.beginPath();
        ctx.moveTo(x + 1, y + 1);
        ctx.lineTo(x + s - 1, y + s - 1);
        ctx.moveTo(x + s - 1, y + 1);
        ctx.lineTo(x + 1, y + s - 1);
        ctx.stroke();
      }
      if (i === st.selected && s >= 3) {
        ctx.strokeStyle = SELECTED;
        ctx.lineWidth = Math.max(1, Math.min(3, s / 4));
        const w = ctx.lineWidth;
        ctx.strokeRect(x + w / 2, y + w / 2, s - w, s - w);
      }
    };
    const drawAll = () => {
      const width = canvas.parentElement!.clientWidth || 800;
      lay = st.lay = layout(width, model.n);
      t.cell = lay.cell;
      t.cols = lay.cols;
      const dpr = window.devicePixelRatio || 1;
      const h = Math.max(lay.rows * lay.cell, lay.cell);
      canvas.width = Math.floor(lay.cols * lay.cell * dpr);
      canvas.height = Math.floor(h * dpr);
      canvas.style.width = `${lay.cols * lay.cell}px`;
      canvas.style.height = `${h}px`;
      ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
      ctx.fillStyle = BG;
      ctx.fillRect(0, 0, lay.cols * lay.cell, h);
      for (let i = 0; i < model.n; i++) drawCell(i);
      model.takeDirty();
      model.allDirty = false;
    };
    const counts = () => {
      const el = countsRef.current;
      if (!el) return;
      el.textContent = `${model.nodes} nodes: ${model.readyNodes} Ready, ${model.nodes - model.readyNodes} ` +
        `NotReady. Pods: ${model.pending} Pending, ${model.running} Running.`;
    };
    const render = () => {
      frame = 0;
      const start = performance.now();
      for (const [type, o, feed] of queue) {
        if (feed === 0) (type === "DELETED" ? model.deleteNode(o) : model.setNode(o));
        else (type === "DELETED" ? model.deletePod(o) : model.setPod(o));
      }
      t.events += queue.length;
      if (queue.length) {
        // when events reached the page: a gap here is the cluster's, not the drawing's
        t.batchTimes.push(start);
        if (t.batchTimes.length > 20_000) t.batchTimes.splice(0, 10_000);
      }
      queue.length = 0;
      const first = !t.firstRender && t.nodesListed > 0;
      if (model.allDirty || first) drawAll();
      else {
        const d = model.takeDirty();
        if (!d.length) {
          counts(); // a pod created or deleted without a node changes the counts, not a cell
          return;
        }
        for (const i of d) drawCell(i);
      }
      const now = performance.now();
      t.longestFrame = Math.max(t.longestFrame, now - start);
      if (first) {
        t.firstRender = now;
        t.nodes = model.nodes;
        performance.mark("scale-first-render");
      }
      t.redraws++;
      t.redrawTimes.push(now);
      if (t.redrawTimes.length > 20_000) t.redrawTimes.splice(0, 10_000);
      counts();
      if (st.selected >= 0) setPicked(describe(model, st.selected));
    };
    const schedule = () => {
      if (!frame) frame = requestAnimationFrame(render);
    };
    st.redrawAll = () => {
      model.allDirty = true;
      schedule();
    };
    st.select = (i: number) => {
      const prev = st.selected;
      st.selected = i;
      if (lay && prev >= 0 && prev < model.n) drawCell(prev);
      if (lay && i >= 0) drawCell(i);
      setPicked(describe(model, i));
    };

    const sink = (feed: 0 | 1): Sink => ({
      reset: (items) => {
        queue.length = 0; // a fresh list supersedes what was queued
        if (feed === 0) {
          model.resetNodes(items);
          if (!t.nodesListed) {
            t.nodesListed = performance.now();
            performance.mark("scale-nodes-listed");
          }
          if (!podFeed) {
            // pods after the nodes, so that cells come in the nodes' list order
            podFeed = new Feed(resourcePath(RES.pods), sink(1));
            podFeed.start();
          }
        } else model.resetPods(items);
        schedule();
      },
      event: (type, o) => {
        queue.push([type, o, feed]);
        schedule();
      },
      error: (e) => setError(e ? e.message : ""),
    });
    const nodeFeed = new Feed(resourcePath(RES.nodes), sink(0));
    nodeFeed.start();
    const onResize = () => st.redrawAll?.();
    addEventListener("resize", onResize);
    return () => {
      nodeFeed.stop();
      podFeed?.stop();
      if (frame) cancelAnimationFrame(frame);
      removeEventListener("resize", onResize);
      st.redrawAll = st.select = null;
      st.model = null;
    };
  }, []);

  const pick = (ev: MouseEvent) => {
    const st = state.current;
    const l = st.lay;
    const m = st.model;
    if (!l || !m) return;
    const r = (ev.currentTarget as HTMLCanvasElement).getBoundingClientRect();
    const col = Math.floor((ev.clientX - r.left) / l.cell);
    const row = Math.floor((ev.clientY - r.top) / l.cell);
    const i = row * l.cols + col;
    if (col >= 0 && col < l.cols && i >= 0 && i < m.n && i !== st.selected) st.select?.(i);
  };
  const key = (ev: KeyboardEvent) => {
    const st = state.current;
    const l = st.lay;
    const m = st.model;
    if (!l || !m || !m.n) return;
    const cur = st.selected < 0 ? 0 : st.selected;
    const moves: Record<string, number> = { ArrowRight: cur + 1, ArrowLeft: cur - 1, ArrowDown: cur + l.cols,
      ArrowUp: cur - l.cols, Home: 0, End: m.n - 1 };
    if (!(ev.key in moves)) return;
    ev.preventDefault();
    st.select?.(st.selected < 0 ? 0 : Math.max(0, Math.min(m.n - 1, moves[ev.key])));
  };
  const changeMetric = (v: number) => {
    state.current.metric = v;
    setMetric(v);
    state.current.redrawAll?.();
  };

  return (
    <section aria-labelledby="scale-title">
      <h1 id="scale-title">Scale</h1>
      {error && <p class="error-text" role="alert">{error}</p>}
      <p class="scale-counts" ref={countsRef} aria-live="off">Loading…</p>
      <div class="toolbar">
        <label for="scale-metric">Colour by</label>
        <select id="scale-metric" value={metric} onChange={(e) => changeMetric(Number((e.target as HTMLSelectElement).value))}>
          {METRICS.map((m, i) => <option key={m.id} value={i}>{m.title}</option>)}
        </select>
        <span class="scale-legend" aria-hidden="true">
          0%{PALETTE.map((c) => <i key={c} style={{ background: c }} />)}100%
          <i style={{ background: NOT_READY }} /> NotReady <i style={{ background: NONE }} /> none offered
        </span>
      </div>
      <p class="scale-picked" id="scale-picked" aria-live="polite">{picked || "Point at a node, or focus the map and use the arrow keys."}</p>
      <div class="scale-wrap">
        <canvas ref={canvasRef} class="scale-map" tabIndex={0} role="img"
          aria-label={`Heatmap of every node by ${METRICS[metric].title}; arrow keys move between nodes`}
          aria-describedby="scale-picked" onMouseMove={pick} onClick={pick} onKeyDown={key} />
      </div>
    </section>
  );
}
