// Kubernetes resource quantities ("100m", "64Mi", "1.5G", "2e3") as numbers.
const SUFFIX: Record<string, number> = {
  n: 1e-9, u: 1e-6, m: 1e-3, "": 1, k: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15, E: 1e18,
  Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, Pi: 2 ** 50, Ei: 2 ** 60,
};

export function parseQuantity(q: string | number | undefined): number {
  if (q === undefined || q === null) return 0;
  if (typeof q === "number") return q;
  const m = /^([+-]?[0-9.]+(?:[eE][+-]?[0-9]+)?)([a-zA-Z]*)$/.exec(q.trim());
  if (!m) return 0;
  const mult = SUFFIX[m[2]];
  return mult === undefined ? 0 : parseFloat(m[1]) * mult;
}

export function formatBytes(n: number): string {
  const units = ["", "Ki", "Mi", "Gi", "Ti", "Pi"];
  let i = 0;
  while (Math.abs(n) >= 1024 && i < units.length - 1) {
    n /= 1024;
    i++;
  }
  return `${Number.isInteger(n) ? n : n.toFixed(1)}${units[i]}`;
}

export function formatCPU(cores: number): string {
  return cores < 10 && !Number.isInteger(cores) ? `${Math.round(cores * 1000)}m` : `${cores}`;
}
