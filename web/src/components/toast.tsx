// Toasts: API errors show the Status message the API wrote (RBAC's included).
import { ApiError } from "../api";
import { useValue, Value } from "../state";

interface Toast {
  id: number;
  text: string;
  error: boolean;
}

const toasts = new Value<Toast[]>([]);
let next = 1;

export function toast(text: string, error = false): void {
  const t = { id: next++, text, error };
  toasts.set([...toasts.get(), t]);
  setTimeout(() => dismiss(t.id), error ? 15_000 : 5_000);
}

export function toastError(e: unknown): void {
  toast(e instanceof ApiError || e instanceof Error ? e.message : String(e), true);
}

function dismiss(id: number): void {
  toasts.set(toasts.get().filter((t) => t.id !== id));
}

export function Toasts() {
  const list = useValue(toasts);
  return (
    <div class="toasts">
      <div role="status" aria-live="polite">
        {list.filter((t) => !t.error).map((t) => (
          <div class="toast" key={t.id}>
            <span>{t.text}</span>
            <button type="button" aria-label="Dismiss" onClick={() => dismiss(t.id)}>×</button>
          </div>
        ))}
      </div>
      <div role="alert">
        {list.filter((t) => t.error).map((t) => (
          <div class="toast error" key={t.id}>
            <span class="toast-text">{t.text}</span>
            <button type="button" aria-label="Dismiss" onClick={() => dismiss(t.id)}>×</button>
          </div>
        ))}
      </div>
    </div>
  );
}
