/**
 * The layers of src/, lowest first. A file may import its own package, any package of a lower
 * layer, and nothing else: never a layer above, and never another package of its own layer
 * unless SAME_LAYER below says why.
 *
 * | layer | packages                                                  | what they are                                  |
 * | ----- | --------------------------------------------------------- | ---------------------------------------------- |
 * | 0     | root files (clock, ids, base64, rfc3339, config)          | pure helpers and the settings                  |
 * | 1     | db, telemetry                                             | the database seam, spans and trace context     |
 * | 2     | journal, queue                                            | the two stores Leasehold is built on           |
 * | 3     | auth, environments                                        | credentials, environments                      |
 * | 4     | agents, sessions                                          | agent definitions, sessions and their logs     |
 * | 5     | loop, housekeeping                                        | the session loop, the cron pass                |
 * | 6     | turns                                                     | the brain's durable turns                      |
 * | 7     | api                                                       | the HTTP app and its routes                    |
 * | 8     | console, cli                                              | the operator console, the command line         |
 *
 * Two more rules: a package with an index.ts is imported through it, never past it; and src/
 * stays runtime-free — no Node built-in or runtime-bound package (RUNTIME_PACKAGES) except what
 * RUNTIME_ALLOWED lets a file import, each file with a comment of its own that says why.
 *
 * Static imports, `export … from` and `import()` (also in type positions) all count, type-only
 * ones included: a type that points up still makes the lower layer depend on the upper one.
 * The runtime rule alone skips `import type`, which is erased and loads nothing.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SRC = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../src');

/** The files directly in src/. */
const ROOT = '(root)';

const LAYERS: readonly (readonly string[])[] = [
  [ROOT],
  ['db', 'telemetry'],
  ['journal', 'queue'],
  ['auth', 'environments'],
  ['agents', 'sessions'],
  ['loop', 'housekeeping'],
  ['turns'],
  ['api'],
  ['console', 'cli'],
];

/**
 * Imports allowed between two packages of one layer, `from → to`, each with why. None is
 * needed today; one that is added says here what it needs and why the packages stay apart.
 */
const SAME_LAYER: readonly { from: string; to: string; why: string }[] = [];

/** Bound to one runtime: Node's built-ins and the packages that need Node (or its addons). */
const RUNTIME_PACKAGES = [
  'ws',
  'pg',
  '@electric-sql/pglite',
  '@hono/node-server',
  '@nats-io/transport-node',
  // Drizzle's adapters that load `pg` and PGlite.
  'drizzle-orm/node-postgres',
  'drizzle-orm/pglite',
];

function isRuntimeModule(specifier: string): boolean {
  if (specifier.startsWith('node:')) return true;
  if (builtinModules.includes(specifier.split('/')[0]!)) return true;
  return RUNTIME_PACKAGES.some((name) => specifier === name || specifier.startsWith(`${name}/`));
}

/**
 * The files of src/ that may import runtime modules: which, and the words of the file's own
 * comment that say why (the check requires them there).
 */
const RUNTIME_ALLOWED: Record<string, { modules: readonly string[]; why: string }> = {
  // Every authenticated request hashes its key; Workers have node:crypto under nodejs_compat.
  'auth/secrets.ts': {
    modules: ['node:crypto'],
    why: 'Hashing uses `node:crypto`, which Workers provide under `nodejs_compat`',
  },
  // The database drivers are the runtime's seam: functions/ picks one per host.
  'db/drivers/node-pg.ts': {
    modules: ['pg', 'drizzle-orm/node-postgres', 'drizzle-orm/node-postgres/migrator'],
    why: 'The `pg` driver (Node)',
  },
  'db/drivers/prepared.ts': { modules: ['pg'], why: 'Server-side prepared statements for the `pg` driver' },
  'db/drivers/pglite.ts': {
    modules: ['@electric-sql/pglite', 'drizzle-orm/pglite', 'drizzle-orm/pglite/migrator'],
    why: 'The embedded driver: PGlite',
  },
};

interface Import {
  specifier: string;
  line: number;
  typeOnly: boolean;
}

/** What each character of a source is: code, a comment, a quoted string's content, template text or a regex. */
type Kind = 'code' | 'comment' | 'string' | 'template' | 'regex';

/**
 * Classifies every character of `source`, so an import quoted in a comment, a string, a
 * template or a regular expression is no import. Template literals nest through `${…}`; a `/`
 * opens a regular expression where a division could not stand.
 */
function classify(source: string): Kind[] {
  const kinds: Kind[] = new Array(source.length);
  const mark = (from: number, to: number, kind: Kind) => kinds.fill(kind, from, Math.min(to, source.length));
  // One entry per open `${` of a template literal: the depth of braces inside it.
  const templates: number[] = [];
  let inTemplate = false;
  let last = ''; // the last significant character of code, to tell a regex from a division
  let i = 0;
  while (i < source.length) {
    const c = source[i]!;
    const next = source[i + 1];
    if (inTemplate) {
      if (c === '`') {
        mark(i, i + 1, 'code');
        inTemplate = false;
        last = '`';
        i++;
      } else if (c === '$' && next === '{') {
        mark(i, i + 2, 'code');
        templates.push(0);
        inTemplate = false;
        last = '{';
        i += 2;
      } else {
        const step = c === '\\' ? 2 : 1;
        mark(i, i + step, 'template');
        i += step;
      }
      continue;
    }
    if (c === '/' && (next === '/' || next === '*')) {
      const end = next === '/' ? source.indexOf('\n', i) : source.indexOf('*/', i + 2);
      const stop = end === -1 ? source.length : next === '/' ? end : end + 2;
      mark(i, stop, 'comment');
      i = stop;
    } else if (c === "'" || c === '"') {
      let j = i + 1;
      while (j < source.length && source[j] !== c && source[j] !== '\n') j += source[j] === '\\' ? 2 : 1;
      mark(i, i + 1, 'code');
      mark(i + 1, j, 'string');
      mark(j, j + 1, 'code');
      last = c;
      i = j + 1;
    } else if (c === '`') {
      mark(i, i + 1, 'code');
      inTemplate = true;
      i++;
    } else if (c === '/' && startsRegex(last, source.slice(0, i))) {
      let j = i + 1;
      let inClass = false;
      for (; j < source.length && source[j] !== '\n'; j++) {
        if (source[j] === '\\') j++;
        else if (source[j] === '[') inClass = true;
        else if (source[j] === ']') inClass = false;
        else if (source[j] === '/' && !inClass) break;
      }
      mark(i, j + 1, 'regex');
      last = '/';
      i = j + 1;
    } else {
      mark(i, i + 1, 'code');
      i++;
      if (templates.length > 0 && c === '{') templates[templates.length - 1]!++;
      else if (templates.length > 0 && c === '}') {
        if (templates[templates.length - 1] === 0) {
          templates.pop();
          inTemplate = true;
          continue;
        }
        templates[templates.length - 1]!--;
      }
      if (!/\s/.test(c)) last = c;
    }
  }
  return kinds;
}

/** Whether a `/` after `last` (and the code before it) opens a regular expression. */
function startsRegex(last: string, before: string): boolean {
  if (last === '' || '(,=:[!&|?{};+-*%<>~^'.includes(last)) return true;
  return /\b(?:return|typeof|case|do|else|in|of|new|delete|void|throw|instanceof|yield|await)\s*$/.test(
    before,
  );
}

/** `source` with every character not of `keep` blanked (newlines stay, so offsets and lines hold). */
function only(source: string, kinds: Kind[], keep: readonly Kind[]): string {
  let out = '';
  for (let i = 0; i < source.length; i++)
    out += keep.includes(kinds[i]!) || source[i] === '\n' ? source[i] : ' ';
  return out;
}

/** The text of `source`'s comments, the rest blanked. */
function commentsOf(source: string): string {
  return only(source, classify(source), ['comment']);
}

/** Every import of a module's source: static, `export … from`, side-effect only, and `import()`. */
function importsOf(source: string): Import[] {
  const kinds = classify(source);
  // Code alone, quotes kept and their contents blanked: the patterns below match here, and
  // each specifier is read from `source` at the offset of its opening quote.
  const code = only(source, kinds, ['code']);
  const lineAt = (index: number) => source.slice(0, index).split('\n').length;
  const specifierAt = (quote: number) => source.slice(quote + 1, source.indexOf(source[quote]!, quote + 1));
  const found: Import[] = [];
  const patterns = [
    /^[ \t]*import\s+(type\s+)?(?:[^'"`;]*?\sfrom\s*)?['"]/gm,
    /^[ \t]*export\s+(type\s+)?(?:\*(?:\s+as\s+\w+)?|\{[^}]*\})\s*from\s*['"]/gm,
  ];
  for (const pattern of patterns)
    for (const m of code.matchAll(pattern)) {
      const quote = m.index + m[0].length - 1;
      found.push({ specifier: specifierAt(quote), line: lineAt(m.index), typeOnly: m[1] !== undefined });
    }
  for (const m of code.matchAll(/\bimport\s*\(\s*(['"]?)/g)) {
    const specifier = m[1]
      ? specifierAt(m.index + m[0].length - 1)
      : `<not a literal: ${code
          .slice(m.index + m[0].length)
          .split(/[)\n]/)[0]!
          .trim()}>`;
    found.push({ specifier, line: lineAt(m.index), typeOnly: false });
  }
  return found.sort((a, b) => a.line - b.line);
}

/** The package of a path relative to src/: its first directory, or ROOT for a file directly in src/. */
function packageOf(file: string): string {
  const parts = file.split('/');
  return parts.length === 1 ? ROOT : parts[0]!;
}

function layerOf(pkg: string): number {
  return LAYERS.findIndex((layer) => layer.includes(pkg));
}

/**
 * What breaks the rules in `files` (path relative to src/ → source), one line each, naming
 * the file, the line and the import.
 */
function layerProblems(files: ReadonlyMap<string, string>): string[] {
  const problems: string[] = [];
  const withIndex = new Set([...files.keys()].filter((f) => /^[^/]+\/index\.ts$/.test(f)).map(packageOf));
  for (const [file, source] of files) {
    const from = packageOf(file);
    const fromLayer = layerOf(from);
    if (fromLayer === -1) {
      problems.push(`src/${file}: package ${from} is in no layer (add it to LAYERS)`);
      continue;
    }
    for (const imp of importsOf(source)) {
      const at = `src/${file}:${imp.line} imports '${imp.specifier}'`;
      if (!imp.specifier.startsWith('.')) {
        const allowed = RUNTIME_ALLOWED[file]?.modules.includes(imp.specifier) ?? false;
        if (isRuntimeModule(imp.specifier) && !imp.typeOnly && !allowed)
          problems.push(`${at}: a runtime module (src/ is runtime-free; see RUNTIME_ALLOWED)`);
        if (imp.specifier.startsWith('<not a literal')) problems.push(`${at}: cannot be checked`);
        continue;
      }
      const target = resolve(file, imp.specifier, files);
      if (target === null) {
        problems.push(`${at}: resolves to no file in src/`);
        continue;
      }
      const to = packageOf(target);
      if (to === from) continue;
      const toLayer = layerOf(to);
      if (toLayer === -1) problems.push(`${at}: package ${to} is in no layer`);
      else if (toLayer > fromLayer)
        problems.push(`${at}: points up, from ${from} (layer ${fromLayer}) to ${to} (layer ${toLayer})`);
      else if (toLayer === fromLayer && !SAME_LAYER.some((r) => r.from === from && r.to === to))
        problems.push(`${at}: ${from} and ${to} share layer ${fromLayer} (see SAME_LAYER)`);
      if (withIndex.has(to) && target !== `${to}/index.ts`) problems.push(`${at}: goes past ${to}/index.ts`);
    }
  }
  return problems;
}

/** The file a relative specifier names (`x.js` is `x.ts` when that exists), or null. */
function resolve(file: string, specifier: string, files: ReadonlyMap<string, string>): string | null {
  const joined = path.posix.normalize(path.posix.join(path.posix.dirname(file), specifier));
  if (joined.startsWith('../')) return null;
  for (const candidate of [joined.replace(/\.js$/, '.ts'), joined])
    if (files.has(candidate)) return candidate;
  return null;
}

/** Every script under src/, by its path relative to src/ with `/` separators. */
function sourceFiles(dir = SRC, files = new Map<string, string>()): Map<string, string> {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) sourceFiles(full, files);
    else if (/\.(ts|mts|js|mjs)$/.test(entry.name))
      files.set(path.relative(SRC, full).split(path.sep).join('/'), readFileSync(full, 'utf8'));
  }
  return files;
}

describe('the layers of src/', () => {
  it('every import points down the layers, through an index.ts where there is one, and src/ stays runtime-free', () => {
    const files = sourceFiles();
    expect(files.size).toBeGreaterThan(100);
    expect(layerProblems(files)).toEqual([]);
  });

  it('every package of src/ is in the table, and every package of the table is in src/', () => {
    const packages = new Set([...sourceFiles().keys()].map(packageOf));
    expect([...packages].sort()).toEqual(LAYERS.flat().sort());
  });

  it('each file allowed a runtime module imports one and says why in its own comment', () => {
    const files = sourceFiles();
    for (const [file, { modules, why }] of Object.entries(RUNTIME_ALLOWED)) {
      const source = files.get(file);
      expect(source, `${file} is listed in RUNTIME_ALLOWED but does not exist`).toBeDefined();
      const imported = new Set(importsOf(source!).map((i) => i.specifier));
      for (const module of modules)
        expect(
          imported.has(module),
          `${file} no longer imports ${module}: drop it from RUNTIME_ALLOWED`,
        ).toBe(true);
      const comments = commentsOf(source!).replace(/\s*\n\s*\*?\s*/g, ' ');
      expect(comments, `${file} must say why in a comment`).toContain(why);
    }
  });
});

describe('the layer check', () => {
  const check = (files: Record<string, string>) => layerProblems(new Map(Object.entries(files)));
  const INDEXES = { 'queue/index.ts': '', 'api/errors.ts': '', 'journal/index.ts': '', 'db/handle.ts': '' };

  it('passes imports that point down, through an index, or stay in their package', () => {
    expect(
      check({
        ...INDEXES,
        'api/routes/x.ts':
          "import { a } from '../../queue/index.js';\nimport type { H } from '../../db/handle.js';",
        'queue/x.ts':
          "import { b } from './index.js';\nimport { c } from '../db/handle.js';\nimport { d } from 'drizzle-orm';",
        'clock.ts': "import { e } from './ids.js';",
        'ids.ts': '',
      }),
    ).toEqual([]);
  });

  it('names the file, line and import of an upward import, also a type-only, a dynamic or a re-export', () => {
    expect(
      check({
        ...INDEXES,
        'queue/x.ts': [
          "import { sql } from 'drizzle-orm';",
          "import { notFound } from '../api/errors.js';",
          "import type {\n  Y,\n} from '../api/errors.js';",
          "export { z } from '../api/errors.js';",
          "const later = () => import('../api/errors.js');",
        ].join('\n'),
      }),
    ).toEqual([
      "src/queue/x.ts:2 imports '../api/errors.js': points up, from queue (layer 2) to api (layer 7)",
      "src/queue/x.ts:3 imports '../api/errors.js': points up, from queue (layer 2) to api (layer 7)",
      "src/queue/x.ts:6 imports '../api/errors.js': points up, from queue (layer 2) to api (layer 7)",
      "src/queue/x.ts:7 imports '../api/errors.js': points up, from queue (layer 2) to api (layer 7)",
    ]);
  });

  it('refuses an import between two packages of one layer, and one from a root file into a package', () => {
    expect(
      check({
        ...INDEXES,
        'journal/x.ts': "import { a } from '../queue/index.js';",
        'config.ts': "import { b } from './db/handle.js';",
      }),
    ).toEqual([
      "src/journal/x.ts:1 imports '../queue/index.js': journal and queue share layer 2 (see SAME_LAYER)",
      "src/config.ts:1 imports './db/handle.js': points up, from (root) (layer 0) to db (layer 1)",
    ]);
  });

  it('refuses an import past another package’s index.ts', () => {
    expect(
      check({
        ...INDEXES,
        'queue/lease.ts': '',
        'api/x.ts': "import { complete } from '../queue/lease.js';",
      }),
    ).toEqual(["src/api/x.ts:1 imports '../queue/lease.js': goes past queue/index.ts"]);
  });

  it('refuses a runtime module a file is not allowed, but not a type-only import of one', () => {
    expect(
      check({
        'api/x.ts': [
          "import { readFile } from 'node:fs/promises';",
          "import { createHash } from 'crypto';",
          "import type { Pool } from 'pg';",
          "import { WebSocket } from 'ws';",
          "import { migrate } from 'drizzle-orm/pglite/migrator';",
        ].join('\n'),
        'auth/secrets.ts': "import { createHash } from 'node:crypto';\nimport { WebSocket } from 'ws';",
      }),
    ).toEqual([
      "src/api/x.ts:1 imports 'node:fs/promises': a runtime module (src/ is runtime-free; see RUNTIME_ALLOWED)",
      "src/api/x.ts:2 imports 'crypto': a runtime module (src/ is runtime-free; see RUNTIME_ALLOWED)",
      "src/api/x.ts:4 imports 'ws': a runtime module (src/ is runtime-free; see RUNTIME_ALLOWED)",
      "src/api/x.ts:5 imports 'drizzle-orm/pglite/migrator': a runtime module (src/ is runtime-free; see RUNTIME_ALLOWED)",
      "src/auth/secrets.ts:2 imports 'ws': a runtime module (src/ is runtime-free; see RUNTIME_ALLOWED)",
    ]);
  });

  it('counts no import written in a comment, a string, a template or a regular expression', () => {
    const source = [
      '/**',
      " * import { notFound } from '../api/errors.js';",
      ' */',
      "// import { x } from 'node:fs';",
      'const text = "import { y } from \'../api/errors.js\'";',
      // biome-ignore lint/suspicious/noTemplateCurlyInString: the source under test holds a template literal
      "const html = `<p>${'`'}import('../api/errors.js')${`/* ${1} */`}</p>`;",
      "const re = /import\\('[^']*'\\)/;",
      "import { ok } from '../db/handle.js';",
    ].join('\n');
    expect(importsOf(source)).toEqual([{ specifier: '../db/handle.js', line: 8, typeOnly: false }]);
    expect(check({ ...INDEXES, 'queue/x.ts': source })).toEqual([]);
  });

  it('refuses what it cannot place: an unknown package, a path out of src/, a missing file, a computed import()', () => {
    expect(
      check({
        'plugins/x.ts': '',
        'db/x.ts': [
          "import { a } from '../../functions/settings.js';",
          "import { b } from './missing.js';",
          'const c = await import(name);',
        ].join('\n'),
      }),
    ).toEqual([
      'src/plugins/x.ts: package plugins is in no layer (add it to LAYERS)',
      "src/db/x.ts:1 imports '../../functions/settings.js': resolves to no file in src/",
      "src/db/x.ts:2 imports './missing.js': resolves to no file in src/",
      "src/db/x.ts:3 imports '<not a literal: name>': cannot be checked",
    ]);
  });
});
