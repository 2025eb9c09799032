/**
 * Our Messages types against the official SDK's: what we send must type as what the SDK sends,
 * and for the same conversation against the same fake API, AnthropicModel and the SDK's own
 * client must send equal bodies and read equal responses.
 */
import Anthropic from '@anthropic-ai/sdk';
import type {
  ContentBlockParam,
  MessageCreateParamsNonStreaming,
  MessageParam as SdkMessageParam,
} from '@anthropic-ai/sdk/resources/messages';
import { afterEach, describe, expect, it } from 'vitest';
import { AnthropicModel } from '../../src/turns/anthropic-model.js';
import { buildMessages, type HistoryEvent } from '../../src/turns/history.js';
import type {
  ContentBlock,
  MessageParam,
  ModelRequest,
  ModelResponse,
  UserContentBlock,
} from '../../src/turns/model.js';
import { toolDefinitions } from '../../src/turns/toolset.js';
import { MessagesServer } from '../helpers/messages-server.js';

// Compile-time: each of ours is one of the SDK's (the typecheck fails otherwise).
const asSdkRequest = (r: ModelRequest): MessageCreateParamsNonStreaming => r;
const asSdkMessage = (m: MessageParam): SdkMessageParam => m;
const asSdkBlock = (b: ContentBlock | UserContentBlock): ContentBlockParam => b;

const KEY = 'sk-sdk-parity';

describe('AnthropicModel and the official SDK, side by side', () => {
  let server: MessagesServer | undefined;
  afterEach(async () => {
    await server?.close();
  });

  it('send the same body for a rebuilt history and read the same response from it', async () => {
    const recorded: ModelResponse[] = [
      {
        content: [
          { type: 'thinking', thinking: 'check', signature: 'sig_1' },
          { type: 'tool_use', id: 'toolu_1', name: 'read', input: { file_path: 'a.txt' } },
        ],
        stop_reason: 'tool_use',
        usage: { input_tokens: 3, output_tokens: 2 },
      },
      {
        content: [{ type: 'text', text: 'It says hi.' }],
        stop_reason: 'end_turn',
        usage: { input_tokens: 9, output_tokens: 4 },
      },
    ];
    const tools = toolDefinitions([
      {
        type: 'agent_toolset_20260401',
        default_config: { enabled: true, permission_policy: { type: 'always_allow' } },
        configs: [],
      },
    ]);
    server = await MessagesServer.start({
      responses: [recorded[1]!, recorded[1]!],
      apiKey: KEY,
      tools: tools.map((t) => t.name),
    });
    const events: HistoryEvent[] = [
      {
        id: 'u1',
        type: 'user.message',
        body: { content: [{ type: 'text', text: 'what is in a.txt?' }] },
        turn: null,
      },
      { id: 't0', type: 'agent.thinking', body: {}, turn: 0 },
      { id: 'ev_1', type: 'agent.tool_use', body: { name: 'read', input: { file_path: 'a.txt' } }, turn: 0 },
      {
        id: 'r1',
        type: 'user.tool_result',
        body: { tool_use_id: 'ev_1', content: [{ type: 'text', text: 'hi' }] },
        turn: null,
      },
    ];
    const request: ModelRequest = {
      model: 'claude-test',
      system: 'Be brief.',
      messages: buildMessages(events, new Map([[0, recorded[0]!]]), new Map([['ev_1', 'toolu_1']])),
      tools,
      max_tokens: 128,
    };

    const ours = await new AnthropicModel({ apiKey: KEY, baseUrl: server.url }).create(request, {
      sessionId: 's',
      callIndex: 1,
    });
    // SDK 1.14 sends `authorization: Bearer` and anthropic-version 2026-10-21 by default; the
    // brain pins x-api-key and 2023-06-01 (see anthropic-model.ts), so the SDK is told the same.
    const sdk = new Anthropic({
      apiKey: KEY,
      baseURL: server.url,
      maxRetries: 0,
      defaultHeaders: { 'x-api-key': KEY, 'anthropic-version': '2023-06-01' },
    });
    const theirs = await sdk.messages.create(asSdkRequest(request));

    expect(server.violations).toEqual([]);
    expect(server.requests[0]!.body).toEqual(server.requests[1]!.body);
    expect(ours.content).toEqual(theirs.content);
    expect(ours.stop_reason).toBe(theirs.stop_reason);
    expect(ours.usage).toEqual(theirs.usage);
    expect(request.messages.map(asSdkMessage)).toHaveLength(3);
    expect(recorded[0]!.content.map(asSdkBlock)).toHaveLength(2);
  });
});
