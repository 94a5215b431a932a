// A bar with its numbers as text (not colour alone): an allocation against capacity (fuller is
// more pressing), or a rollout's progress (full is done).
export function Bar({ label, used, total, text, progress }: { label: string; used: number; total: number;
  text: string; progress?: boolean }) {
  const pct = total > 0 ? Math.min(100, (used / total) * 100) : 0;
  const level = progress ? (pct >= 100 || total === 0 ? "done" : "mid")
    : pct >= 90 ? "high" : pct >= 70 ? "mid" : "low";
  return (
    <div class="bar" role="meter" aria-label={label} aria-valuemin={0} aria-valuemax={total || 0}
      aria-valuenow={used} aria-valuetext={text}>
      <div class={`bar-fill ${level}`} style={{ width: `${pct}%` }} />
      <span class="bar-text">{text}</span>
    </div>
  );
}
