/**
 * What "a secret appears" means for the hygiene checks: the secret itself, any 16 characters
 * of it in a row, and the same for its random bytes re-encoded (hex, standard base64), so a
 * store or log that kept part of a key, or kept it in another encoding, is caught too.
 */
import { createHash } from 'node:crypto';

/** Shorter runs could turn up by chance in other random data; 16 base64url characters are 96 bits. */
export const WINDOW = 16;

function windows(text: string): string[] {
  if (text.length <= WINDOW) return [text];
  return Array.from({ length: text.length - WINDOW + 1 }, (_, i) => text.slice(i, i + WINDOW));
}

/** The secret and every form of it that must never be found. */
export function secretForms(secret: string): string[] {
  const forms = windows(secret);
  const m = /^lh_(?:env|api)_([A-Za-z0-9_-]+)$/.exec(secret);
  if (m) {
    const bytes = Buffer.from(m[1]!, 'base64url');
    forms.push(...windows(bytes.toString('hex')), ...windows(bytes.toString('base64')));
  }
  return forms;
}

export const sha256Hex = (secret: string) => createHash('sha256').update(secret, 'utf8').digest('hex');

/** Every secret form found in `haystack`, named by the secret's first characters. */
export function hits(haystack: string, secrets: readonly string[]): string[] {
  const found: string[] = [];
  for (const secret of secrets)
    for (const form of secretForms(secret))
      if (haystack.includes(form)) found.push(`${secret.slice(0, 10)}…: "${form}"`);
  return found;
}

/** How many strings `hits` looks for. */
export const formCount = (secrets: readonly string[]) =>
  secrets.reduce((n, s) => n + secretForms(s).length, 0);
