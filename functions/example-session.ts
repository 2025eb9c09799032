/**
 * The session loop on one machine, with nothing configured (`npm run example:session`): a
 * private nats-server for the journal, the Node server on an embedded database with its brain
 * on the scripted model (examples/session-script.json), and the official SDK — an agent, an
 * environment, its key and a session made through the API, and the unmodified
 * `EnvironmentWorker` with its default toolset plus one custom tool. One user message; the
 * conversation is printed from the session's event stream as it happens; then everything is
 * shut down and the temporary files removed. Exits 0 when the session ended its turn.
 *
 * Needs only the `nats-server` binary (Debian: apt-get install nats-server).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Anthropic from '@anthropic-ai/sdk';
import { betaTool } from '@anthropic-ai/sdk/helpers/beta/json-schema';
import { betaAgentToolset20260401 } from '@anthropic-ai/sdk/tools/agent-toolset/node';
import { launchNatsServer, type NatsServerProcess } from './nats-server.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const SCRIPT = 'examples/session-script.json';
const USER_MESSAGE = 'Say hello from the worker\'s shell, then define "leasehold".';
/** Bounds: the server's start (bundled if a source changed, the embedded database migrates), the conversation. */
const START_TIMEOUT_MS = 30_000;
const CONVERSATION_TIMEOUT_MS = 30_000;
/** A tool result longer than this many lines is cut when printed. */
const MAX_RESULT_LINES = 20;
/** The width of the transcript's labels ("define result"). */
const LABEL_WIDTH = 13;

/** The custom tool the worker runs for the agent, next to the SDK's agent toolset. */
const DICTIONARY: Record<string, string> = {
  leasehold:
    'the right to hold something for a fixed term under a lease; it ends when the term lapses unless renewed',
};
const DEFINE = {
  name: 'define',
  description: 'Defines a word from the worker’s own dictionary.',
  input_schema: { type: 'object', properties: { word: { type: 'string' } }, required: ['word'] },
} as const;
const define = betaTool({
  name: DEFINE.name,
  description: DEFINE.description,
  inputSchema: DEFINE.input_schema,
  run: async ({ word }) => `${word}: ${DICTIONARY[word.toLowerCase()] ?? 'not in this dictionary'}`,
});

const out = (line = '') => process.stdout.write(`${line}\n`);

/** Everything the example started, stopped in reverse order; safe to call more than once. */
class Resources {
  temp: string | undefined;
  nats: NatsServerProcess | undefined;
  server: ChildProcess | undefined;
  serverOutput = '';
  stopWorker: (() => Promise<void>) | undefined;
  #closing: Promise<number | null> | undefined;

  /** Resolves with the server's exit code (null when it was never started). */
  close(): Promise<number | null> {
    this.#closing ??= (async () => {
      await this.stopWorker?.().catch(() => {});
      const code = await stopServer(this.server);
      await this.nats?.stop().catch(() => {});
      if (this.temp) await rm(this.temp, { recursive: true, force: true });
      return code;
    })();
    return this.#closing;
  }
}

async function stopServer(child: ChildProcess | undefined): Promise<number | null> {
  if (!child) return null;
  if (child.exitCode !== null || child.signalCode !== null) return child.exitCode ?? 1;
  const exited = new Promise<number>((resolve) =>
    child.once('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0))),
  );
  child.kill('SIGTERM');
  const kill = setTimeout(() => child.kill('SIGKILL'), 10_000);
  const code = await exited;
  clearTimeout(kill);
  return code;
}

/**
 * The Node server (as `npm start` runs it) with only what this example sets: its embedded
 * database in the temporary directory, a port of its own choosing, the journal on the private
 * nats-server, and the brain on the scripted model. Resolves with its base URL.
 */
async function startServer(res: Resources, natsUrl: string, adminKey: string): Promise<string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) {
    // Settings of the caller's shell stay out: this example runs on its own.
    if (v !== undefined && !/^(DATABASE_URL|NATS_URL|PORT|HOST|LEASEHOLD_|ANTHROPIC_|OTEL_)/.test(k))
      env[k] = v;
  }
  Object.assign(env, {
    PORT: '0',
    HOST: '127.0.0.1',
    LEASEHOLD_DATA_DIR: path.join(res.temp!, 'data'),
    LEASEHOLD_ADMIN_KEY: adminKey,
    NATS_URL: natsUrl,
    LEASEHOLD_MODEL: `scripted:${path.join(ROOT, SCRIPT)}`,
  });
  // As `npm start` runs it.
  const child = spawn(
    process.execPath,
    [path.join(ROOT, 'scripts/launch.mjs'), path.join(ROOT, 'functions/node.ts')],
    {
      cwd: ROOT,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  res.server = child;
  const keep = (chunk: Buffer) => {
    res.serverOutput = (res.serverOutput + chunk.toString('utf8')).slice(-64 * 1024);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  return new Promise<string>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`the server did not start within ${START_TIMEOUT_MS / 1000} s`)),
      START_TIMEOUT_MS,
    );
    const listening = () => {
      const url = /listening on (http:\/\/\S+)/.exec(res.serverOutput)?.[1];
      if (!url) return;
      clearTimeout(timer);
      child.stderr!.off('data', listening);
      resolve(url);
    };
    child.stderr!.on('data', listening);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`the server exited during its start (exit code ${code})`));
    });
  });
}

/** An environment key for the worker (the SDK has no call for it: plain HTTP). */
async function environmentKey(baseURL: string, adminKey: string, environmentId: string): Promise<string> {
  const res = await fetch(`${baseURL}/v1/environments/${environmentId}/keys`, {
    method: 'POST',
    headers: { authorization: `Bearer ${adminKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'example worker' }),
  });
  if (res.status !== 201) throw new Error(`creating the environment key: ${res.status} ${await res.text()}`);
  return ((await res.json()) as { key: string }).key;
}

interface Block {
  type: string;
  text?: string;
}

interface SessionEvent {
  type: string;
  id: string;
  content?: Block[];
  name?: string;
  input?: unknown;
  tool_use_id?: string;
  custom_tool_use_id?: string;
  is_error?: boolean | null;
  stop_reason?: { type: string } | null;
  error?: { type?: string; message?: string };
}

/** Prints the conversation one event at a time; says when the session's turn is over. */
class Transcript {
  readonly #toolNames = new Map<string, string>();
  /** The final status: set by an idle that is not waiting for a tool, or a termination. */
  final: string | null = null;

  print(e: SessionEvent): void {
    const line = this.#render(e);
    if (!line) return;
    const [label, text] = line;
    const [first, ...rest] = text.split('\n');
    out(`${label.padStart(LABEL_WIDTH)} │ ${first}`);
    for (const more of rest) out(`${''.padStart(LABEL_WIDTH)} │ ${more}`);
  }

  /** The event as a labelled line, or null for one the conversation reads the same without. */
  #render(e: SessionEvent): [label: string, text: string] | null {
    switch (e.type) {
      case 'user.message':
        return ['user', textOf(e.content)];
      case 'agent.message':
        return ['agent', textOf(e.content)];
      case 'agent.thinking':
        return ['thinking', '…'];
      case 'agent.tool_use':
      case 'agent.custom_tool_use': {
        const name = e.name ?? '?';
        this.#toolNames.set(e.id, name);
        const custom = e.type === 'agent.custom_tool_use' ? '  (custom tool)' : '';
        return ['tool call', `${name} ${JSON.stringify(e.input ?? {})}${custom}`];
      }
      case 'user.tool_result':
      case 'user.custom_tool_result': {
        const name = this.#toolNames.get(e.tool_use_id ?? e.custom_tool_use_id ?? '') ?? 'tool';
        const text = cut(textOf(e.content) || '(no output)');
        return [`${name} result`, e.is_error ? `(error) ${text}` : text];
      }
      case 'session.error':
        return ['error', `${e.error?.type ?? 'error'}: ${e.error?.message ?? ''}`];
      case 'session.status_idle': {
        // Idle waiting for a tool's result is part of the turn; any other idle ends it.
        const reason = e.stop_reason?.type ?? 'none';
        if (reason === 'requires_action') return null;
        this.final = reason;
        return ['status', `idle (${reason})`];
      }
      case 'session.status_terminated':
        this.final = 'terminated';
        return ['status', 'terminated'];
      default:
        return null; // running, rescheduled
    }
  }
}

function textOf(content: Block[] | undefined): string {
  return (content ?? [])
    .map((b) => (b.type === 'text' ? (b.text ?? '') : `[${b.type}]`))
    .join('')
    .trimEnd();
}

function cut(text: string): string {
  const lines = text.split('\n');
  if (lines.length <= MAX_RESULT_LINES) return text;
  return [...lines.slice(0, MAX_RESULT_LINES), `… ${lines.length - MAX_RESULT_LINES} more lines`].join('\n');
}

async function run(res: Resources): Promise<boolean> {
  res.temp = await mkdtemp(path.join(tmpdir(), 'leasehold-example-'));
  const workdir = path.join(res.temp, 'workdir');
  await mkdir(workdir);
  out('Leasehold: the session loop on one machine');
  res.nats = await launchNatsServer();
  out(`  journal      nats-server ${res.nats.wsUrl} (JetStream, its store in a temporary directory)`);
  const adminKey = `lh_example_${randomBytes(24).toString('hex')}`;
  const baseURL = await startServer(res, res.nats.wsUrl, adminKey);
  out(`  server       ${baseURL} (the embedded database, in a temporary directory)`);
  out(`  brain        in the server, on the scripted model ${SCRIPT}`);

  const admin = new Anthropic({ apiKey: adminKey, authToken: null, baseURL, maxRetries: 2 });
  const agent = await admin.beta.agents.create({
    name: 'example agent',
    model: 'claude-sonnet-4-5',
    system: 'You help with small tasks on the worker’s machine.',
    tools: [
      { type: 'agent_toolset_20260401' },
      // The same definition the worker's tool carries (a mutable copy of its `required`).
      { type: 'custom', ...DEFINE, input_schema: { ...DEFINE.input_schema, required: ['word'] } },
    ],
  });
  const environment = await admin.beta.environments.create({
    name: 'example',
    config: { type: 'self_hosted' },
  });
  const key = await environmentKey(baseURL, adminKey, environment.id);
  const session = await admin.beta.sessions.create({ agent: agent.id, environment_id: environment.id });
  out(`  agent        ${agent.id} (the agent toolset and the custom tool "define")`);
  out(`  environment  ${environment.id} (self_hosted; the SDK's EnvironmentWorker serves it)`);
  out(`  session      ${session.id}`);
  out();

  // The worker: the SDK's own, unmodified; its tools run here, in a temporary working directory.
  const stopWorker = new AbortController();
  const worker = new Anthropic({
    apiKey: key,
    authToken: null,
    baseURL,
    maxRetries: 2,
  }).beta.environments.work.worker({
    environmentId: environment.id,
    environmentKey: key,
    workdir,
    workerId: 'example-worker',
    memorySyncIntervalMs: null,
    tools: (ctx) => [...betaAgentToolset20260401(ctx), define],
  });
  const working = worker.run(stopWorker.signal).catch((err: unknown) => {
    if (!stopWorker.signal.aborted) throw err;
  });
  res.stopWorker = async () => {
    stopWorker.abort();
    await working;
  };

  // Open the stream first: it carries everything appended from now on.
  const stream = await admin.beta.sessions.events.stream(session.id);
  const transcript = new Transcript();
  const printed = (async () => {
    for await (const event of stream) {
      transcript.print(event as unknown as SessionEvent);
      if (transcript.final) return;
    }
  })();
  await admin.beta.sessions.events.send(session.id, {
    events: [{ type: 'user.message', content: [{ type: 'text', text: USER_MESSAGE }] }],
  });
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    await Promise.race([
      printed,
      new Promise<never>((_, reject) => {
        timer = setTimeout(
          () =>
            reject(
              new Error(`the session did not finish its turn within ${CONVERSATION_TIMEOUT_MS / 1000} s`),
            ),
          CONVERSATION_TIMEOUT_MS,
        );
      }),
    ]);
  } finally {
    clearTimeout(timer);
    stream.controller.abort();
  }

  const ended = await admin.beta.sessions.retrieve(session.id);
  const usage = ended.usage as { input_tokens?: number; output_tokens?: number };
  out();
  out(
    `The session is ${ended.status} (${transcript.final}); the model used ${usage.input_tokens ?? 0} input and ${usage.output_tokens ?? 0} output tokens.`,
  );
  return transcript.final === 'end_turn';
}

async function main(): Promise<void> {
  const res = new Resources();
  let interrupted = false;
  const interrupt = (signal: NodeJS.Signals) => {
    if (interrupted) return;
    interrupted = true;
    process.stderr.write(`example:session: ${signal}, shutting down\n`);
    void res.close().then(() => process.exit(signal === 'SIGINT' ? 130 : 143));
  };
  process.on('SIGINT', interrupt);
  process.on('SIGTERM', interrupt);

  let ok = false;
  try {
    ok = await run(res);
  } catch (err) {
    if (!interrupted)
      process.stderr.write(`example:session failed: ${err instanceof Error ? err.message : String(err)}\n`);
  }
  // After Ctrl-C the interrupt's own shutdown ends the process.
  if (interrupted) return;
  const serverCode = await res.close();
  if (serverCode !== null && serverCode !== 0) {
    process.stderr.write(`example:session: the server exited with ${serverCode}\n`);
    ok = false;
  }
  if (!ok && res.serverOutput) process.stderr.write(`The server's output:\n${res.serverOutput}\n`);
  if (ok) out('Everything is shut down.');
  process.exit(ok ? 0 : 1);
}

void main();
