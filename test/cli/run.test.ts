/**
 * The CLI in-process, for what needs no server: usage errors, help, and how an API error
 * envelope or a refused connection becomes one line and an exit code.
 */
import { describe, expect, it } from 'vitest';
import type { CliDeps } from '../../src/cli/index.js';
import { EXIT_FAILED, EXIT_UNREACHABLE, EXIT_USAGE, runCli } from '../../src/cli/index.js';

function setup(fetchImpl: typeof fetch = () => Promise.reject(new Error('no network here'))) {
  const out: string[] = [];
  const err: string[] = [];
  const deps: CliDeps = {
    env: {},
    stdout: { write: (s) => void out.push(s) },
    stderr: { write: (s) => void err.push(s) },
    fetch: fetchImpl,
    sleep: async () => {},
    interrupt: () => new AbortController().signal,
    serve: async () => {},
    brain: async () => {},
    migrate: async () => {},
    provisionJournal: async () => ({ created: true }),
  };
  const run = async (...argv: string[]) => {
    out.length = 0;
    err.length = 0;
    const code = await runCli(argv, deps);
    return { code, stdout: out.join(''), stderr: err.join('') };
  };
  return { run };
}

describe('runCli', () => {
  it('prints the tool’s help listing every command of the issue, and each command’s own help', async () => {
    const { run } = setup();
    const help = await run('--help');
    expect(help.code).toBe(0);
    for (const name of [
      'serve',
      'brain',
      'migrate',
      'env create',
      'env list',
      'env archive',
      'key create',
      'key list',
      'key revoke',
      'api-key create',
      'api-key revoke',
      'enqueue',
      'stats',
      'work list',
      'work get',
      'work stop',
      'session cancel',
      'journal read',
      'journal check',
      'journal provision',
    ]) {
      expect(help.stdout).toContain(`  ${name} `);
    }
    const one = await run('work', 'stop', '--help');
    expect(one.stdout).toMatch(/^Usage: leasehold work stop <environment_id> <work_id> \[--force\]/);
  });

  it('usage errors exit 2 with one line naming the problem', async () => {
    const { run } = setup();
    const cases: [string[], string][] = [
      [['frobnicate'], 'leasehold: unknown command "frobnicate"; see leasehold --help\n'],
      [
        ['env', 'nuke'],
        'leasehold: env has no subcommand "nuke" (one of create, list, archive); see leasehold --help\n',
      ],
      [['work', 'get', 'env_1'], 'leasehold: missing <work_id>\n'],
      [['stats', 'env_1', '--bogus'], 'leasehold: unknown option --bogus\n'],
      [['stats', 'env_1'], 'leasehold: no key: pass --key or set LEASEHOLD_KEY\n'],
      [
        ['api-key', 'create', 'n', '--key', 'k', '--scope', 'root'],
        'leasehold: --scope must be admin or platform\n',
      ],
      [['migrate'], 'leasehold: no database: pass --database-url or set DATABASE_URL\n'],
    ];
    for (const [argv, line] of cases) {
      expect(await run(...argv), argv.join(' ')).toEqual({ code: EXIT_USAGE, stdout: '', stderr: line });
    }
  });

  it('an API error envelope becomes `status type: message`, exit 1; a non-envelope keeps its status', async () => {
    const envelope = {
      type: 'error',
      request_id: 'req_1',
      error: { type: 'not_found_error', message: 'work item not found' },
    };
    const { run } = setup(async () => new Response(JSON.stringify(envelope), { status: 404 }));
    expect(await run('work', 'get', 'env_1', 'work_1', '--key', 'k')).toEqual({
      code: EXIT_FAILED,
      stdout: '',
      stderr: 'leasehold: 404 not_found_error: work item not found\n',
    });
    const proxy = setup(async () => new Response('Bad Gateway', { status: 502 }));
    expect((await proxy.run('stats', 'env_1', '--key', 'k')).stderr).toBe(
      'leasehold: 502 http_error: Bad Gateway\n',
    );
  });

  it('a fetch that cannot connect is exit 3 with the socket’s reason, never a stack', async () => {
    const refused = Object.assign(new TypeError('fetch failed'), {
      cause: Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }),
    });
    const { run } = setup(() => Promise.reject(refused));
    expect(await run('stats', 'env_1', '--key', 'k', '--url', 'http://127.0.0.1:9/')).toEqual({
      code: EXIT_UNREACHABLE,
      stdout: '',
      stderr: 'leasehold: cannot reach http://127.0.0.1:9: ECONNREFUSED\n',
    });
  });
});
