// The balance over time as a hand-drawn SVG step chart (no chart library: one small component).
import { credits, when } from "../format";

const W = 640, H = 220, L = 64, R = 16, T = 16, B = 34;

// Round ticks around the balance's own range, not from zero: a change of a few credits on a
// balance of a thousand must show as a step, not as a flat line.
export function niceTicks(lo: number, hi: number, count = 4): number[] {
  if (hi - lo < 1e-9) { const pad = Math.max(Math.abs(hi) * 0.05, 1); lo = Math.max(0, lo - pad); hi = hi + pad; }
  const raw = (hi - lo) / count, mag = Math.pow(10, Math.floor(Math.log10(raw)));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * mag).find((s) => s >= raw) || raw;
  const out = [];
  const start = Math.floor(lo / step + 1e-9) * step;
  for (let v = start; v <= hi + step * 0.001; v += step) out.push(Number(v.toFixed(10)));
  if (out[out.length - 1] < hi) out.push(out[out.length - 1] + step);
  return out;
}

// Time labels as fine as the span needs: two labels a few seconds apart must differ.
export function timeLabel(span: number): (t: number) => string {
  const opts: Intl.DateTimeFormatOptions = span >= 2 * 86400e3 ? { month: "short", day: "2-digit" }
    : span >= 3600e3 ? { month: "short", day: "2-digit", hour: "2-digit", minute: "2-digit" }
    : { hour: "2-digit", minute: "2-digit", second: "2-digit" };
  return (t: number) => new Date(t).toLocaleString("en-GB", opts);
}

export function BalanceChart({ series }: { series: { at: string; balance_credits: number }[] }) {
  const pts = (series || []).filter((p) => p.at).map((p) => ({ t: new Date(p.at).getTime(), v: p.balance_credits }))
    .sort((a, b) => a.t - b.t);
  if (pts.length === 0) return <p class="muted small">No balance history yet.</p>;
  const now = Date.now();
  if (pts[pts.length - 1].t < now) pts.push({ t: now, v: pts[pts.length - 1].v }); // carry to today
  const t0 = pts[0].t, t1 = Math.max(pts[pts.length - 1].t, t0 + 1000);
  const values = pts.map((p) => p.v);
  const ticks = niceTicks(Math.min(...values), Math.max(...values));
  const vmin = ticks[0], vmax = ticks[ticks.length - 1];
  const x = (t: number) => L + ((t - t0) / (t1 - t0)) * (W - L - R);
  const y = (v: number) => T + (1 - (v - vmin) / (vmax - vmin || 1)) * (H - T - B);
  let d = `M${x(pts[0].t).toFixed(1)},${y(pts[0].v).toFixed(1)}`;
  for (let i = 1; i < pts.length; i++) d += ` H${x(pts[i].t).toFixed(1)} V${y(pts[i].v).toFixed(1)}`;
  const area = `${d} V${y(vmin)} H${x(pts[0].t).toFixed(1)} Z`;
  const first = pts[0], last = pts[pts.length - 1];
  const fmt = (t: number) => new Date(t).toLocaleString("en-GB", { month: "short", day: "2-digit", hour: "2-digit", minute: "2-digit" });
  const axisTime = timeLabel(t1 - t0);
  const summary = `Balance from ${credits(first.v)} credits on ${fmt(first.t)} to ${credits(last.v)} credits now, ` +
    `lowest ${credits(Math.min(...pts.map((p) => p.v)))}, highest ${credits(Math.max(...pts.map((p) => p.v)))}.`;
  return (
    <figure class="chart">
      <svg viewBox={`0 0 ${W} ${H}`} role="img" aria-label={summary} class="chart-svg">
        {ticks.map((v) => (
          <g key={v}>
            <line x1={L} x2={W - R} y1={y(v)} y2={y(v)} class="grid" />
            <text x={L - 8} y={y(v) + 4} class="axis" text-anchor="end">{credits(v)}</text>
          </g>
        ))}
        <text x={L} y={H - 10} class="axis" text-anchor="start">{axisTime(t0)}</text>
        <text x={W - R} y={H - 10} class="axis" text-anchor="end">{axisTime(t1)}</text>
        <path d={area} class="area" />
        <path d={d} class="line" />
        {(series || []).map((p, i) => (
          <circle key={i} cx={x(new Date(p.at).getTime())} cy={y(p.balance_credits)} r="3" class="pt">
            <title>{`${when(p.at)}: ${credits(p.balance_credits)} credits`}</title>
          </circle>
        ))}
      </svg>
      <figcaption class="muted small">{summary}</figcaption>
    </figure>
  );
}
