/**
 * A small source scanner for the timing-safe comparison gate (docs/guarantees.md): finds
 * every `===`, `!==`, `==` and `!=` in TypeScript source with comments, string contents and
 * regular expressions blanked out, and names its two operands. A comparison whose operand is
 * named like a secret (`secret`, `token`, `key`, `proof`, `hash`, `digest`) is a finding
 * unless the other side is a presence check (`null`, `undefined`, a number, `''`, a boolean).
 */

/**
 * Replaces comments, string contents and regex bodies, keeping every line break so line
 * numbers hold; `'S'` stands for a non-empty string, `/R/` for a regex.
 */
export function blankNonCode(src: string): string {
  let out = '';
  const breaks = (from: number, to: number) => '\n'.repeat(src.slice(from, to).split('\n').length - 1);
  let i = 0;
  const templates: number[] = []; // brace depth at each open `${`
  let depth = 0;
  const regexMayStart = () => /(^|[(,=:[!&|?{};+\-*%<>~^]|\breturn|\btypeof)\s*$/.test(out.slice(-20));
  while (i < src.length) {
    const c = src[i]!;
    const next = src[i + 1];
    if (c === '/' && next === '/') {
      while (i < src.length && src[i] !== '\n') i++;
    } else if (c === '/' && next === '*') {
      const end = src.indexOf('*/', i + 2);
      const to = end < 0 ? src.length : end + 2;
      out += ` ${breaks(i, to)}`;
      i = to;
    } else if (c === '"' || c === "'") {
      let j = i + 1;
      while (j < src.length && src[j] !== c) j += src[j] === '\\' ? 2 : 1;
      out += j === i + 1 ? "''" : "'S'";
      i = j + 1;
    } else if (c === '`' || (c === '}' && templates.length && templates[templates.length - 1] === depth)) {
      if (c === '}') templates.pop();
      let j = i + 1;
      while (j < src.length && src[j] !== '`' && !(src[j] === '$' && src[j + 1] === '{'))
        j += src[j] === '\\' ? 2 : 1;
      if (src[j] === '$') {
        templates.push(depth);
        out += `'S'${breaks(i, j)}+(`;
        i = j + 2;
        continue;
      }
      out += (c === '}' ? ")+'S'" : "'S'") + breaks(i, j);
      i = j + 1;
    } else if (c === '/' && regexMayStart()) {
      let j = i + 1;
      let inClass = false;
      while (j < src.length && (inClass || src[j] !== '/') && src[j] !== '\n') {
        if (src[j] === '\\') j++;
        else if (src[j] === '[') inClass = true;
        else if (src[j] === ']') inClass = false;
        j++;
      }
      out += '/R/';
      i = j + 1;
      while (/[a-z]/.test(src[i] ?? '')) i++;
    } else {
      if (c === '{') depth++;
      if (c === '}') depth--;
      out += c;
      i++;
    }
  }
  return out;
}

const IDENT = /[\w$]/;

/** The member chain ending just before `end` (`a.b?.c(x)[0]!`), read backwards. */
function chainBefore(code: string, end: number): string {
  let i = end;
  while (i > 0 && /\s/.test(code[i - 1]!)) i--;
  const stop = i;
  for (;;) {
    const c = code[i - 1];
    if (c === undefined) break;
    if (c === ')' || c === ']') {
      const open = c === ')' ? '(' : '[';
      let d = 0;
      let j = i - 1;
      for (; j >= 0; j--) {
        if (code[j] === c) d++;
        else if (code[j] === open && --d === 0) break;
      }
      i = j;
    } else if (IDENT.test(c) || c === '.' || c === '!' || c === '?') {
      if ((c === '!' || c === '?') && code[i] === '=') break;
      i--;
    } else break;
  }
  return code.slice(i, stop);
}

/** The member chain starting at `start`, read forwards. */
function chainAfter(code: string, start: number): string {
  let i = start;
  while (i < code.length && /\s/.test(code[i]!)) i++;
  const from = i;
  if (code[i] === "'") return code.slice(i, code.indexOf("'", i + 1) + 1);
  for (;;) {
    const c = code[i];
    if (c === undefined) break;
    if (c === '(' || c === '[') {
      const close = c === '(' ? ')' : ']';
      let d = 0;
      let j = i;
      for (; j < code.length; j++) {
        if (code[j] === c) d++;
        else if (code[j] === close && --d === 0) break;
      }
      i = j + 1;
    } else if (IDENT.test(c) || c === '.' || c === '?' || c === '!') {
      if (c === '?' && code[i + 1] !== '.') break;
      i++;
    } else break;
  }
  return code.slice(from, i);
}

/** The name a chain ends on, calls and indexes dropped: `row.keyHash` → `keyHash`, `f(x)` → `f`. */
export function nameOf(chain: string): string {
  let s = chain;
  let prev = '';
  while (prev !== s) {
    prev = s;
    s = s.replace(/\([^()]*\)|\[[^[\]]*\]/g, '');
  }
  const parts = s.replace(/!/g, '').split(/\??\./).filter(Boolean);
  return parts[parts.length - 1] ?? '';
}

const PRESENCE = /^(null|undefined|true|false|''|\d[\d_.]*)$/;
export const SENSITIVE = /secret|token|key|proof|hash|digest/i;

export interface Finding {
  line: number;
  text: string;
  name: string;
}

/** Equality comparisons on secret-like operands, and every `.equals(` / `Buffer.compare(`. */
export function findComparisons(src: string): Finding[] {
  const code = blankNonCode(src);
  const lineAt = (i: number) => code.slice(0, i).split('\n').length;
  const findings: Finding[] = [];
  for (const m of code.matchAll(/(?<![=!<>])(===|!==|==|!=)(?!=)/g)) {
    const left = chainBefore(code, m.index);
    const right = chainAfter(code, m.index + m[0].length);
    if (PRESENCE.test(left) || PRESENCE.test(right)) continue;
    const name = [nameOf(left), nameOf(right)].find((n) => SENSITIVE.test(n));
    if (name) findings.push({ line: lineAt(m.index), text: `${left} ${m[0]} ${right}`, name });
  }
  for (const m of code.matchAll(/\.equals\(|\bBuffer\.compare\(/g))
    findings.push({ line: lineAt(m.index), text: m[0], name: m[0] });
  return findings;
}
