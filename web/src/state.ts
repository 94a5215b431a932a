// Small observable values shared by the shell and the pages (the chosen namespace, the user).
import { useEffect, useState } from "preact/hooks";

export class Value<T> {
  private listeners = new Set<(v: T) => void>();
  constructor(private v: T) {}
  get(): T {
    return this.v;
  }
  set(v: T): void {
    this.v = v;
    for (const fn of this.listeners) fn(v);
  }
  subscribe(fn: (v: T) => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }
}

export function useValue<T>(value: Value<T>): T {
  const [v, setV] = useState(value.get());
  useEffect(() => {
    setV(value.get());
    return value.subscribe(setV);
  }, [value]);
  return v;
}

const NS_KEY = "pyk8s-dashboard-namespace";
// "" means all namespaces
export const namespace = new Value<string>(localStorage.getItem(NS_KEY) ?? "default");
namespace.subscribe((ns) => localStorage.setItem(NS_KEY, ns));

export interface UserInfo {
  username?: string;
  groups?: string[];
}
export const user = new Value<UserInfo | null>(null);
