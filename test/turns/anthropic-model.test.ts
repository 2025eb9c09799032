import { afterEach, describe, expect, it } from 'vitest';
import { AnthropicModel, MAX_RETRY_AFTER_MS, retryAfterMs } from '../../src/turns/anthropic-model.js';
import { ModelError, type ModelRequest, type ModelResponse } from '../../src/turns/model.js';
import { AGENT_TOOLSET_TOOLS } from '../../src/turns/toolset.js';
import { MessagesServer, type MessagesServerOptions } from '../helpers/messages-server.js';

const KEY = 'sk-model-test';
const TOOL_NAMES = AGENT_TOOLSET_TOOLS.map((t) => t.name);
const ctx = { sessionId: 'sesn_test', callIndex: 0 };
/** Retries in these tests wait this long (the server asks via retry-after-ms), to stay fast. */
const FAST = { 'retry-after-ms': '5' };

const toolCall: ModelResponse = {
  content: [
    { type: 'thinking', thinking: 'list it', signature: 'sig_1' },
    { type: 'tool_use', id: 'toolu_1', name: 'bash', input: { command: 'ls' } },
  ],
  stop_reason: 'tool_use',
  usage: { input_tokens: 12, output_tokens: 7 },
};
const done: ModelResponse = { content: [{ type: 'text', text: 'done' }], stop_reason: 'end_turn', usage: {} };

function ask(text: string): ModelRequest {
  return {
    model: 'claude-test',
    system: 'You are terse.',
    messages: [{ role: 'user', content: [{ type: 'text', text }] }],
    tools: structuredClone([...AGENT_TOOLSET_TOOLS]),
    max_tokens: 256,
  };
}

describe('AnthropicModel against a fake Messages API that checks every request', () => {
  let server: MessagesServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });
  async function start(options: Partial<MessagesServerOptions> = {}): Promise<MessagesServer> {
    server = await MessagesServer.start({
      responses: [toolCall, done],
      apiKey: KEY,
      tools: TOOL_NAMES,
      ...options,
    });
    return server;
  }

  it('sends one well-formed request and returns the response’s content, stop reason and usage verbatim', async () => {
    const s = await start();
    const model = new AnthropicModel({ apiKey: KEY, baseUrl: `${s.url}/` });
    const response = await model.create(ask('list files'), ctx);
    expect(response).toEqual({ id: 'msg_fake_1', model: 'claude-test', role: 'assistant', ...toolCall });
    expect(s.violations).toEqual([]);
    expect(s.requests).toHaveLength(1);
    expect(s.requests[0]!.body).toEqual({ ...ask('list files') });
    expect(s.requests[0]!.headers).toMatchObject({ 'x-api-key': KEY, 'anthropic-version': '2023-06-01' });
  });

  it('a two-call conversation that pairs the tool call with its result passes the API’s checks', async () => {
    const s = await start();
    const model = new AnthropicModel({ apiKey: KEY, baseUrl: s.url });
    const first = await model.create(ask('list files'), ctx);
    const second: ModelRequest = {
      ...ask('list files'),
      messages: [
        ...ask('list files').messages,
        { role: 'assistant', content: first.content },
        {
          role: 'user',
          content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'a.txt', is_error: false }],
        },
      ],
    };
    expect((await model.create(second, { ...ctx, callIndex: 1 })).content).toEqual(done.content);
    expect(s.violations).toEqual([]);
  });

  it('retries 529 and then succeeds, waiting as the server asks', async () => {
    const s = await start();
    s.failNext(2, 529, FAST);
    const model = new AnthropicModel({ apiKey: KEY, baseUrl: s.url, maxRetries: 2 });
    expect((await model.create(ask('x'), ctx)).stop_reason).toBe('tool_use');
    expect(s.requests).toHaveLength(3);
    expect(s.violations).toEqual([]);
  });

  it('honours retry-after in seconds before retrying a 429', async () => {
    const s = await start();
    s.failNext(1, 429, { 'retry-after': '1' });
    const model = new AnthropicModel({ apiKey: KEY, baseUrl: s.url });
    const began = performance.now();
    await model.create(ask('x'), ctx);
    expect(performance.now() - began).toBeGreaterThanOrEqual(950);
    expect(s.requests).toHaveLength(2);
  });

  it('without retry-after, backs off (≥ 375 ms: 500 ms less at most 25 % jitter) before the first retry', async () => {
    const s = await start();
    s.failNext(1, 500);
    const model = new AnthropicModel({ apiKey: KEY, baseUrl: s.url });
    const began = performance.now();
    await model.create(ask('x'), ctx);
    expect(performance.now() - began).toBeGreaterThanOrEqual(370);
  });

  const exhausted: Array<[number, string]> = [
    [529, 'overloaded'],
    [429, 'rate_limited'],
    [503, 'request_failed'],
  ];
  it.each(exhausted)(
    'a %i past the last retry is a ModelError %s carrying the status',
    async (status, kind) => {
      const s = await start();
      s.failNext(3, status, FAST);
      const model = new AnthropicModel({ apiKey: KEY, baseUrl: s.url, maxRetries: 2 });
      const err = await model.create(ask('x'), ctx).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ModelError);
      expect(err).toMatchObject({ kind, status });
      expect(s.requests).toHaveLength(3);
    },
  );

  it('a 400 is not retried: ModelError request_failed with status 400 and the API’s message', async () => {
    const s = await start({ tools: ['something_else'] });
    const model = new AnthropicModel({ apiKey: KEY, baseUrl: s.url });
    const err = await model.create(ask('x'), ctx).catch((e: unknown) => e);
    expect(err).toMatchObject({ kind: 'request_failed', status: 400 });
    expect((err as Error).message).toMatch(/invalid_request_error: tools .* are not the expected/);
    expect(s.requests).toHaveLength(1);
  });

  it('x-should-retry: false stops retrying a status that would be retried', async () => {
    const s = await start();
    s.failNext(1, 529, { 'x-should-retry': 'false' });
    const err = await new AnthropicModel({ apiKey: KEY, baseUrl: s.url })
      .create(ask('x'), ctx)
      .catch((e) => e);
    expect(err).toMatchObject({ kind: 'overloaded', status: 529 });
    expect(s.requests).toHaveLength(1);
  });

  it('a wrong key is a 401 request_failed, and the server records it', async () => {
    const s = await start();
    const err = await new AnthropicModel({ apiKey: 'sk-wrong', baseUrl: s.url })
      .create(ask('x'), ctx)
      .catch((e) => e);
    expect(err).toMatchObject({ kind: 'request_failed', status: 401 });
    expect(s.violations.map((v) => v.problems)).toEqual([['x-api-key is not the configured key']]);
  });

  it('a request with a dangling tool_use is refused, and the server reports the violation', async () => {
    const s = await start();
    const request: ModelRequest = {
      ...ask('x'),
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'list files' }] },
        { role: 'assistant', content: toolCall.content },
        { role: 'user', content: [{ type: 'text', text: 'well?' }] },
      ],
    };
    const err = await new AnthropicModel({ apiKey: KEY, baseUrl: s.url })
      .create(request, ctx)
      .catch((e) => e);
    expect(err).toMatchObject({ kind: 'request_failed', status: 400 });
    expect(s.violations).toEqual([
      { request: 0, problems: ['messages[1]: tool_use toolu_1 has no tool_result in messages[2]'] },
    ]);
  });

  it('an abort from the caller stops the retries and rejects with the abort’s reason, not a ModelError', async () => {
    const s = await start();
    s.failNext(1, 529, { 'retry-after': '30' });
    const controller = new AbortController();
    const call = new AnthropicModel({ apiKey: KEY, baseUrl: s.url }).create(ask('x'), {
      ...ctx,
      signal: controller.signal,
    });
    setTimeout(() => controller.abort(new Error('lease lost')), 100);
    await expect(call).rejects.toThrow('lease lost');
    expect(s.requests).toHaveLength(1);
  });
});

describe('AnthropicModel without a server', () => {
  it('no answer at all (connection refused) is request_failed with no status, after its retries', async () => {
    let attempts = 0;
    const refused: typeof fetch = async () => {
      attempts++;
      throw new TypeError('fetch failed');
    };
    const model = new AnthropicModel({ apiKey: KEY, fetch: refused, maxRetries: 1 });
    const err = await model.create(ask('x'), ctx).catch((e) => e);
    expect(err).toMatchObject({ kind: 'request_failed', status: null });
    expect(attempts).toBe(2);
  });

  it('an attempt that outlives timeoutMs is abandoned and reported as a timeout', async () => {
    const hangs: typeof fetch = (_url, init) =>
      new Promise((_, reject) => init?.signal?.addEventListener('abort', () => reject(init.signal?.reason)));
    const model = new AnthropicModel({ apiKey: KEY, fetch: hangs, timeoutMs: 20, maxRetries: 0 });
    await expect(model.create(ask('x'), ctx)).rejects.toThrow(/timed out after 20 ms/);
  });

  it('calls https://api.anthropic.com/v1/messages by default', async () => {
    let url = '';
    const capture: typeof fetch = async (input) => {
      url = String(input);
      return new Response(JSON.stringify(done), { status: 200 });
    };
    await new AnthropicModel({ apiKey: KEY, fetch: capture }).create(ask('x'), ctx);
    expect(url).toBe('https://api.anthropic.com/v1/messages');
  });

  it('a 200 that is not a message is request_failed, not a response with no content', async () => {
    const odd: typeof fetch = async () => new Response('<html>proxy</html>', { status: 200 });
    await expect(new AnthropicModel({ apiKey: KEY, fetch: odd }).create(ask('x'), ctx)).rejects.toMatchObject(
      {
        kind: 'request_failed',
        status: 200,
      },
    );
  });

  it('retry-after is read as seconds, ms, or an HTTP date, capped, and ignored when absent or not positive', () => {
    const h = (init: Record<string, string>) => new Headers(init);
    expect(retryAfterMs(h({ 'retry-after': '2' }))).toBe(2_000);
    expect(retryAfterMs(h({ 'retry-after-ms': '150', 'retry-after': '9' }))).toBe(150);
    expect(retryAfterMs(h({ 'retry-after': new Date(10_000).toUTCString() }), 7_000)).toBe(3_000);
    expect(retryAfterMs(h({ 'retry-after': '3600' }))).toBe(MAX_RETRY_AFTER_MS);
    expect(retryAfterMs(h({ 'retry-after': '0' }))).toBeNull();
    expect(retryAfterMs(h({ 'retry-after': 'soon' }))).toBeNull();
    expect(retryAfterMs(h({}))).toBeNull();
  });

  it('refuses a configuration it cannot honour', () => {
    expect(() => new AnthropicModel({ apiKey: '' })).toThrow(/apiKey/);
    expect(() => new AnthropicModel({ apiKey: KEY, maxRetries: 11 })).toThrow(/maxRetries/);
    expect(() => new AnthropicModel({ apiKey: KEY, timeoutMs: 0 })).toThrow(/timeoutMs/);
  });
});
