/**
 * The session loop's end-to-end story, told the same way on the Node server and on the
 * Workers build: a user asks the agent to say hello from bash and look a word up; the model
 * (a fake Messages API replaying RESPONSES) calls bash, then the custom `lookup` tool, then
 * answers. `expectStory` checks what the session's log and stream must then hold.
 */
import { expect } from 'vitest';
import type { MessagesServer } from './messages-server.js';

const usage = { input_tokens: 12, output_tokens: 7 };

/** The model's three answers: bash, then the custom tool, then the final text. */
export const STORY_RESPONSES = [
  {
    content: [
      { type: 'text', text: 'Let me run that.' },
      { type: 'tool_use', id: 'toolu_01', name: 'bash', input: { command: 'echo hello-from-bash' } },
    ],
    stop_reason: 'tool_use',
    usage,
  },
  {
    content: [{ type: 'tool_use', id: 'toolu_02', name: 'lookup', input: { word: 'leasehold' } }],
    stop_reason: 'tool_use',
    usage,
  },
  {
    content: [{ type: 'text', text: 'All done: hello-from-bash, and leasehold means a lease.' }],
    stop_reason: 'end_turn',
    usage,
  },
];
/** Usage summed over the story's three turns. */
export const STORY_USAGE = { input_tokens: 36, output_tokens: 21 };
/** The tools every request must offer: the built-in toolset the worker runs, then `lookup`. */
export const STORY_TOOLS = ['bash', 'read', 'write', 'edit', 'glob', 'grep', 'lookup'];
export const LOOKUP_SCHEMA = {
  type: 'object',
  properties: { word: { type: 'string' } },
  required: ['word'],
} as const;
export const STORY_MESSAGE = 'Say hello from bash, then look up leasehold.';

/**
 * The log (as `events.list` gives it) and the frames the stream carried after the message:
 * three turns, each tool run once on the worker, one answer each, and every request the fake
 * API received well formed, none repeated.
 */
export function expectStory(
  listed: Array<Record<string, unknown>>,
  streamed: Array<{ id: string }>,
  messages: MessagesServer,
): void {
  expect(listed.map((e) => e.type)).toEqual([
    'user.message',
    'session.status_running',
    'agent.message',
    'agent.tool_use',
    'session.status_idle',
    'user.tool_result',
    'session.status_running',
    'agent.custom_tool_use',
    'session.status_idle',
    'user.custom_tool_result',
    'session.status_running',
    'agent.message',
    'session.status_idle',
  ]);
  // The stream carried the same history, frame for frame, after the message it opened before.
  expect(streamed.map((e) => e.id)).toEqual(listed.map((e) => e.id as string));
  const bashResult = listed[5] as { content: Array<{ text: string }>; is_error: boolean };
  expect(bashResult.is_error).toBe(false);
  expect(bashResult.content.map((b) => b.text).join('')).toContain('hello-from-bash');
  expect(listed[9]).toMatchObject({
    is_error: false,
    content: [{ type: 'text', text: 'leasehold means a lease' }],
  });
  expect(listed[12]).toMatchObject({ stop_reason: { type: 'end_turn' }, stop_details: null });
  expect(listed[3]).toMatchObject({ name: 'bash', evaluated_permission: 'allow' });
  // Every request the brain sent passed the fake API's checks; three calls, no repeat.
  expect(messages.violations).toEqual([]);
  expect(messages.served).toBe(3);
}
