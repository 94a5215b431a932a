// A modal confirm dialog (the native <dialog>: focus moves into it, Escape cancels).
import type { ComponentChildren } from "preact";
import { useEffect, useRef } from "preact/hooks";
import { useValue, Value } from "../state";

interface Ask {
  title: string;
  body: ComponentChildren;
  confirm: string;
  danger?: boolean;
  resolve: (ok: boolean) => void;
}

const current = new Value<Ask | null>(null);

export function confirmAction(title: string, body: ComponentChildren, confirm = "Confirm",
  danger = false): Promise<boolean> {
  return new Promise((resolve) => current.set({ title, body, confirm, danger, resolve }));
}

export function ConfirmHost() {
  const ask = useValue(current);
  const ref = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    if (ask && ref.current && !ref.current.open) ref.current.showModal();
  }, [ask]);
  if (!ask) return null;
  const done = (ok: boolean) => {
    ref.current?.close();
    current.set(null);
    ask.resolve(ok);
  };
  return (
    <dialog ref={ref} class="confirm" aria-labelledby="confirm-title" onCancel={() => done(false)}>
      <h2 id="confirm-title">{ask.title}</h2>
      <div class="confirm-body">{ask.body}</div>
      <div class="actions">
        <button type="button" onClick={() => done(false)}>Cancel</button>
        <button type="button" class={ask.danger ? "danger" : "primary"} onClick={() => done(true)}>
          {ask.confirm}
        </button>
      </div>
    </dialog>
  );
}
