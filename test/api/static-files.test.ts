import { describe, expect, it } from 'vitest';
import { parseHeadersFile, staticHeaders } from '../../src/api/static-files.js';

describe('static files and their _headers rules', () => {
  const rules = parseHeadersFile(
    [
      '# a comment',
      '/console/assets/*',
      '  Cache-Control: public, max-age=31536000, immutable',
      '  X-Content-Type-Options: nosniff',
      '',
      '/openapi.json',
      '  Cache-Control: no-cache',
    ].join('\n'),
  );

  it('a path gets its content type and the headers of every rule that matches it, names in lower case', () => {
    expect(staticHeaders('/console/assets/console-0123456789ab.js', rules)).toEqual({
      'content-type': 'text/javascript; charset=utf-8',
      'cache-control': 'public, max-age=31536000, immutable',
      'x-content-type-options': 'nosniff',
    });
    expect(staticHeaders('/openapi.json', rules)).toEqual({
      'content-type': 'application/json',
      'cache-control': 'no-cache',
    });
  });

  it('a splat matches only under its prefix, and a path matching no rule gets its content type alone', () => {
    expect(staticHeaders('/console/page.css', rules)).toEqual({ 'content-type': 'text/css; charset=utf-8' });
    expect(staticHeaders('/other/console/assets/x.js', rules)).toEqual({
      'content-type': 'text/javascript; charset=utf-8',
    });
  });

  it('a header line before any path is refused rather than applied to nothing', () => {
    expect(() => parseHeadersFile('  Cache-Control: no-cache')).toThrow(/outside a path/);
  });
});
