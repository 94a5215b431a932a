// Hash routes ("#/pods/default/web-0"): a page is a path pattern with ":name" parameters.
import { useEffect, useState } from "preact/hooks";

export function currentPath(): string {
  const h = location.hash.replace(/^#/, "");
  return h.startsWith("/") ? h : "/";
}

export function usePath(): string {
  const [p, setP] = useState(currentPath());
  useEffect(() => {
    const on = () => setP(currentPath());
    addEventListener("hashchange", on);
    // the hash may have changed between the first render and this effect (a page still starting
    // on a loaded machine): that hashchange came before the listener, so read it again now
    on();
    return () => removeEventListener("hashchange", on);
  }, []);
  return p;
}

export function match(pattern: string, path: string): Record<string, string> | null {
  const a = pattern.split("/").filter(Boolean);
  const b = path.split("?")[0].split("/").filter(Boolean);
  if (a.length !== b.length) return null;
  const params: Record<string, string> = {};
  for (let i = 0; i < a.length; i++) {
    if (a[i].startsWith(":")) params[a[i].slice(1)] = decodeURIComponent(b[i]);
    else if (a[i] !== b[i]) return null;
  }
  return params;
}

// "#/pods/:namespace/:name" with values filled in
export function href(pattern: string, params: Record<string, string> = {}): string {
  return "#" + pattern.replace(/:([A-Za-z]+)/g, (_, k: string) => encodeURIComponent(params[k] ?? ""));
}

export function navigate(pattern: string, params: Record<string, string> = {}): void {
  location.hash = href(pattern, params);
}
