/** Aligned text tables for people: a header row, then one row per record, columns padded to fit. */

export type Cell = string | number | boolean | null | undefined;

export function formatTable(headers: readonly string[], rows: readonly (readonly Cell[])[]): string {
  const cells = [headers.map(String), ...rows.map((r) => r.map(show))];
  const widths = headers.map((_, col) => Math.max(...cells.map((r) => (r[col] ?? '').length)));
  return cells
    .map((r) =>
      r
        .map((c, col) => (col === r.length - 1 ? c : c.padEnd(widths[col]!)))
        .join('  ')
        .trimEnd(),
    )
    .map((line) => `${line}\n`)
    .join('');
}

/** Key/value pairs, keys aligned: one record shown in full. */
export function formatRecord(pairs: readonly (readonly [string, Cell])[]): string {
  const width = Math.max(...pairs.map(([k]) => k.length));
  return pairs.map(([k, v]) => `${k.padEnd(width)}  ${show(v)}\n`).join('');
}

/** Absent values read as `-`, so a column never looks shifted. */
function show(value: Cell): string {
  if (value === null || value === undefined || value === '') return '-';
  return String(value).replace(/\s+/g, ' ');
}
