/**
 * English messages for every schema. zod/mini loads no locale of its own — each issue would
 * say only "Invalid input" — and a 400 quotes zod's message word for word (`parseWith` in
 * body.ts, which imports this module before it parses anything). Importing `en` by name keeps
 * zod's other locales out of the Worker bundle.
 */
import { en } from 'zod/locales';
import * as z from 'zod/mini';

z.config(en());
