// An allocation bar: used against capacity, with the numbers as text (not colour alone).
export function Bar({ label, used, total, text }: { label: string; used: number; total: number; text: string }) {
  const pct = total > 0 ? Math.min(100, (used / total) * 100) : 0;
  const level = pct >= 90 ? "high" : pct >= 70 ? "mid" : "low";
  return (
    <div class="bar" role="meter" aria-label={label} aria-valuemin={0} aria-valuemax={total || 0}
      aria-valuenow={used} aria-valuetext={text}>
      <div class={`bar-fill ${level}`} style={{ width: `${pct}%` }} />
      <span class="bar-text">{text}</span>
    </div>
  );
}
