// A small inline SVG line chart of samples over time, with reference lines (an HPA's target,
// its min/max replicas). Its numbers are also its accessible name: a screen reader hears the
// latest values, not a picture.
export interface Series {
  name: string;
  points: [number, number][]; // [time in ms, value]
  cls: string; // stroke colour class (styles.css)
  step?: boolean; // a count that holds until the next sample (replicas)
}

export interface RefLine {
  value: number;
  label: string;
  cls: string;
}

interface Props {
  label: string;
  series: Series[];
  refs?: RefLine[];
  format: (v: number) => string;
  until: number; // the right edge: now (the last value holds until then)
  width?: number;
  height?: number;
}

const PAD = { left: 44, right: 8, top: 8, bottom: 18 };

// the axis' top: the next 1, 2 or 5 times a power of ten above the largest value
function niceCeil(v: number): number {
  const p = 10 ** Math.floor(Math.log10(v));
  return ([1, 2, 5, 10].find((m) => m * p >= v) as number) * p;
}

function ago(ms: number): string {
  const s = Math.round(ms / 1000);
  return s < 120 ? `${s}s ago` : `${Math.round(s / 60)}m ago`;
}

export function LineChart({ label, series, refs = [], format, until, width = 360, height = 130 }: Props) {
  const all = series.flatMap((s) => s.points);
  const t0 = all.length ? Math.min(...all.map((p) => p[0])) : until;
  const t1 = Math.max(until, t0 + 1000);
  const top = niceCeil(Math.max(1e-9, ...all.map((p) => p[1]), ...refs.map((r) => r.value)) * 1.1);
  const w = width - PAD.left - PAD.right;
  const h = height - PAD.top - PAD.bottom;
  const x = (t: number) => PAD.left + ((t - t0) / (t1 - t0)) * w;
  const y = (v: number) => PAD.top + h - (v / top) * h;
  const path = (s: Series) => {
    const pts: string[] = [];
    s.points.forEach(([t, v], i) => {
      if (s.step && i > 0) pts.push(`${x(t).toFixed(1)},${y(s.points[i - 1][1]).toFixed(1)}`);
      pts.push(`${x(t).toFixed(1)},${y(v).toFixed(1)}`);
    });
    const last = s.points[s.points.length - 1];
    if (last) pts.push(`${x(t1).toFixed(1)},${y(last[1]).toFixed(1)}`); // the value holds until now
    return pts.join(" ");
  };
  const summary = series.map((s) => {
    const last = s.points[s.points.length - 1];
    return `${s.name}: ${last ? format(last[1]) : "no samples"}`;
  }).concat(refs.map((r) => `${r.label}: ${format(r.value)}`)).join("; ");
  return (
    <figure class="chart">
      <svg role="img" aria-label={`${label}. ${summary}`} viewBox={`0 0 ${width} ${height}`} width={width}
        height={height} data-samples={all.length}>
        <line class="axis" x1={PAD.left} y1={PAD.top + h} x2={PAD.left + w} y2={PAD.top + h} />
        <text class="tick" x={PAD.left - 4} y={PAD.top + 8} text-anchor="end">{format(top)}</text>
        <text class="tick" x={PAD.left - 4} y={PAD.top + h} text-anchor="end">{format(0)}</text>
        <text class="tick" x={PAD.left} y={height - 4}>{all.length ? ago(until - t0) : ""}</text>
        <text class="tick" x={PAD.left + w} y={height - 4} text-anchor="end">now</text>
        {refs.map((r) => (
          <g key={r.label}>
            <line class={`ref ${r.cls}`} x1={PAD.left} x2={PAD.left + w} y1={y(r.value)} y2={y(r.value)} />
            <text class="tick" x={PAD.left + w - 2} y={y(r.value) - 3} text-anchor="end">{r.label}</text>
          </g>
        ))}
        {series.map((s) => (
          <g key={s.name} class={`series ${s.cls}`}>
            {s.points.length > 0 && <polyline points={path(s)} />}
            {s.points.map(([t, v], i) => <circle key={i} class="pt" cx={x(t)} cy={y(v)} r={2.5} />)}
          </g>
        ))}
      </svg>
      <figcaption>
        {label}:{" "}
        {series.map((s) => <span key={s.name} class="legend"><span class={`swatch ${s.cls}`} aria-hidden="true" />{s.name}</span>)}
        {refs.map((r) => <span key={r.label} class="legend"><span class={`swatch dashed ${r.cls}`} aria-hidden="true" />{r.label}</span>)}
      </figcaption>
    </figure>
  );
}
