/**
 * `npm run example:session` as a user runs it, with nothing configured: it starts its own
 * nats-server and server (embedded database, scripted brain), drives a session with the SDK's
 * EnvironmentWorker, prints the conversation, shuts everything down and exits 0 — in well
 * under a minute.
 */
import { spawn } from 'node:child_process';
import { connect } from 'node:net';
import { describe, expect, it } from 'vitest';
import { ROOT, serverEnvironment } from '../helpers/server.js';

/** "Well under a minute" on an idle machine; the bound leaves room for a busy one. */
const RUN_TIMEOUT_MS = 60_000;

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
  ms: number;
}

/** `npm run example:session` in its own process group (killed whole on timeout). */
function runExample(): Promise<Run> {
  const started = Date.now();
  return new Promise((resolve) => {
    const child = spawn('npm', ['run', '--silent', 'example:session'], {
      cwd: ROOT,
      env: serverEnvironment(),
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => {
      stdout += c.toString();
    });
    child.stderr.on('data', (c: Buffer) => {
      stderr += c.toString();
    });
    const timer = setTimeout(() => {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {}
    }, RUN_TIMEOUT_MS);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr, ms: Date.now() - started });
    });
  });
}

/** True when nothing accepts connections on the loopback port any more. */
function closed(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', () => resolve(true));
  });
}

describe('npm run example:session', () => {
  it('prints the conversation — user, agent, tool calls with input, results, final status — and exits 0 with everything shut down', async () => {
    const run = await runExample();
    expect(run.code, `stdout:\n${run.stdout}\nstderr:\n${run.stderr}`).toBe(0);
    expect(run.ms).toBeLessThan(RUN_TIMEOUT_MS);

    const transcript = run.stdout
      .split('\n')
      .filter((line) => line.includes(' │ '))
      .map((line) => line.trim());
    expect(transcript).toEqual([
      'user │ Say hello from the worker\'s shell, then define "leasehold".',
      "agent │ I'll say hello from the worker's shell first.",
      'tool call │ bash {"command":"echo \\"hello from $(uname -s)\\""}',
      expect.stringMatching(/^bash result │ hello from \S+$/),
      "agent │ Now the definition, from the worker's own dictionary.",
      'tool call │ define {"word":"leasehold"}  (custom tool)',
      expect.stringMatching(/^define result │ leasehold: the right to hold something for a fixed term/),
      expect.stringMatching(/^agent │ The worker's shell said hello, and a leasehold is/),
      'status │ idle (end_turn)',
    ]);
    expect(run.stdout).toMatch(
      /The session is idle \(end_turn\); the model used 3901 input and 126 output tokens\./,
    );
    expect(run.stdout.trimEnd().endsWith('Everything is shut down.')).toBe(true);

    // The server and nats-server it started are gone: their ports refuse connections.
    const server = /server +http:\/\/127\.0\.0\.1:(\d+)/.exec(run.stdout);
    const nats = /nats-server ws:\/\/127\.0\.0\.1:(\d+)/.exec(run.stdout);
    expect(server && nats).toBeTruthy();
    expect(await closed(Number(server![1]))).toBe(true);
    expect(await closed(Number(nats![1]))).toBe(true);
  }, 90_000);
});
