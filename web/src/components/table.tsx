// A sortable table: click (or Enter on) a column header to sort by it, again to reverse.
import type { ComponentChildren } from "preact";
import { useMemo, useState } from "preact/hooks";

export interface Column<T> {
  id: string;
  title: string;
  // the value sorted on (and shown, unless render is given)
  value: (row: T) => string | number;
  render?: (row: T) => ComponentChildren;
  numeric?: boolean;
}

interface Props<T> {
  label: string; // the table's caption, for screen readers and tests
  columns: Column<T>[];
  rows: T[];
  rowKey: (row: T) => string;
  initialSort?: string;
  descending?: boolean;
  empty?: string;
  limit?: number; // rows shown at most (large clusters): the rest are counted
}

export function Table<T>({ label, columns, rows, rowKey, initialSort, descending, empty, limit }: Props<T>) {
  const [sort, setSort] = useState(initialSort || columns[0]?.id);
  const [desc, setDesc] = useState(Boolean(descending));
  const col = columns.find((c) => c.id === sort) || columns[0];
  const sorted = useMemo(() => {
    const out = rows.slice();
    out.sort((x, y) => {
      const a = col.value(x), b = col.value(y);
      const r = typeof a === "number" && typeof b === "number" ? a - b : String(a).localeCompare(String(b),
        undefined, { numeric: true });
      return desc ? -r : r;
    });
    return out;
  }, [rows, col, desc]);
  const shown = limit ? sorted.slice(0, limit) : sorted;
  const by = (id: string) => {
    if (id === sort) setDesc(!desc);
    else {
      setSort(id);
      setDesc(false);
    }
  };
  return (
    <div class="table-wrap">
      <table aria-label={label}>
        <caption class="visually-hidden">{label}</caption>
        <thead>
          <tr>
            {columns.map((c) => (
              <th scope="col" key={c.id} class={c.numeric ? "num" : undefined}
                aria-sort={c.id === sort ? (desc ? "descending" : "ascending") : "none"}>
                <button type="button" class="sort" onClick={() => by(c.id)} data-column={c.id}>
                  {c.title}
                  <span aria-hidden="true">{c.id === sort ? (desc ? " ▼" : " ▲") : ""}</span>
                </button>
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {shown.map((r) => (
            <tr key={rowKey(r)} data-key={rowKey(r)}>
              {columns.map((c) => (
                <td key={c.id} class={c.numeric ? "num" : undefined} data-column={c.id}>
                  {c.render ? c.render(r) : c.value(r)}
                </td>
              ))}
            </tr>
          ))}
          {!rows.length && (
            <tr>
              <td colSpan={columns.length} class="empty">{empty || "None."}</td>
            </tr>
          )}
        </tbody>
      </table>
      {limit && rows.length > limit && <p class="muted">Showing {limit} of {rows.length}.</p>}
    </div>
  );
}
