/**
 * Reads assets/ — what Workers serve as static assets — and its _headers file into the map the
 * Node app serves the same files from, with the same headers (src/api/static-files.ts). Read
 * once at start: a few files, ~550 KiB, most of it the OpenAPI document.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  parseHeadersFile,
  type StaticFile,
  type StaticFiles,
  staticHeaders,
} from '../src/api/static-files.js';

export const ASSETS_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../assets');

/** Files Workers read as configuration rather than serve (assets/_headers). */
const NOT_SERVED = new Set(['_headers', '_redirects', '.assetsignore']);

export function loadStaticFiles(dir: string = ASSETS_DIR): StaticFiles {
  const headersFile = path.join(dir, '_headers');
  const rules = existsSync(headersFile) ? parseHeadersFile(readFileSync(headersFile, 'utf8')) : [];
  const files = new Map<string, StaticFile>();
  for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile() || NOT_SERVED.has(entry.name)) continue;
    const full = path.join(entry.parentPath, entry.name);
    const urlPath = `/${path.relative(dir, full).split(path.sep).join('/')}`;
    files.set(urlPath, { body: readFileSync(full), headers: staticHeaders(urlPath, rules) });
  }
  return files;
}
