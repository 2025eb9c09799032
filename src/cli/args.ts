/**
 * Command-line parsing: `--name value`, `--name=value`, boolean `--flag`, `-h`, repeatable
 * options, and `--` to end options. Small on purpose (no dependency, no runtime module), and
 * strict: an unknown option or a missing value is a `UsageError`, never silently ignored.
 */
import { UsageError } from './errors.js';

export interface OptionSpec {
  type: 'string' | 'boolean';
  /** Collect every occurrence (string options only). */
  multiple?: boolean;
  short?: string;
}
export type OptionSpecs = Record<string, OptionSpec>;
export type Values = Record<string, string | boolean | string[] | undefined>;

export interface Parsed {
  values: Values;
  positionals: string[];
}

export function parseArgs(argv: readonly string[], specs: OptionSpecs): Parsed {
  const values: Values = {};
  const positionals: string[] = [];
  const byShort = new Map(
    Object.entries(specs).flatMap(([name, s]) => (s.short ? [[s.short, name] as const] : [])),
  );
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--') {
      positionals.push(...argv.slice(i + 1));
      break;
    }
    let name: string;
    let inline: string | undefined;
    if (arg.startsWith('--')) {
      const eq = arg.indexOf('=');
      name = eq === -1 ? arg.slice(2) : arg.slice(2, eq);
      inline = eq === -1 ? undefined : arg.slice(eq + 1);
    } else if (/^-[A-Za-z]$/.test(arg)) {
      const long = byShort.get(arg.slice(1));
      if (!long) throw new UsageError(`unknown option ${arg}`);
      name = long;
    } else {
      positionals.push(arg);
      continue;
    }
    const spec = specs[name];
    if (!spec) throw new UsageError(`unknown option --${name}`);
    if (spec.type === 'boolean') {
      if (inline !== undefined) throw new UsageError(`--${name} takes no value`);
      values[name] = true;
      continue;
    }
    const value = inline ?? argv[++i];
    if (value === undefined) throw new UsageError(`--${name} needs a value`);
    if (spec.multiple) values[name] = [...((values[name] as string[] | undefined) ?? []), value];
    else values[name] = value;
  }
  return { values, positionals };
}

/** A string option's value, or undefined. */
export function text(values: Values, name: string): string | undefined {
  const v = values[name];
  return typeof v === 'string' ? v : undefined;
}

/** A whole-number option within [min, max], or `fallback` when absent. */
export function integer(values: Values, name: string, fallback: number, min: number, max: number): number {
  const v = text(values, name);
  if (v === undefined) return fallback;
  if (!/^\d{1,9}$/.test(v) || Number(v) < min || Number(v) > max) {
    throw new UsageError(`--${name} must be a whole number from ${min} to ${max}`);
  }
  return Number(v);
}

/** Exactly the named positionals, in order; a missing or extra one is a usage error. */
export function expectPositionals(positionals: readonly string[], names: readonly string[]): string[] {
  if (positionals.length < names.length) {
    throw new UsageError(`missing <${names[positionals.length]}>`);
  }
  if (positionals.length > names.length) {
    throw new UsageError(`unexpected argument ${JSON.stringify(positionals[names.length])}`);
  }
  return [...positionals];
}
