/**
 * Performing one tool call (docs/journal.md, "Durable tool calls"): what replay.ts planned for its position is
 * written here, around the tool function. The intent is written **before** the function
 * runs, so a successor knows the call was started; the function's own failure is recorded
 * in `result.error` and not thrown; an output that is not a JSON value is a programmer error
 * (TypeError) thrown before the result is recorded.
 */
import type { OwnerGuard } from './guard.js';
import { assertJson } from './json.js';
import { type ReplayBook, type ToolCall, type ToolResult, toolKey } from './replay.js';
import type { Json, Replay, ToolIntentBody } from './types.js';
import type { FencedWriter } from './writer.js';

export type ToolFn = (call: ToolCall) => Json | undefined | Promise<Json | undefined>;

export interface ToolContext {
  writer: FencedWriter;
  book: ReplayBook;
  guard: OwnerGuard;
  /** Marks the position taken: the next call gets the next one. */
  take(): void;
}

export async function callTool(
  ctx: ToolContext,
  position: number,
  call: { name: string; input?: Json },
  replay: Replay,
  fn: ToolFn,
): Promise<ToolResult> {
  if (typeof call.name !== 'string' || call.name === '')
    throw new TypeError('tool name must be a non-empty string');
  if (replay !== 'safe' && replay !== 'unsafe') throw new TypeError('replay must be "safe" or "unsafe"');
  if (call.input !== undefined) assertJson(call.input, 'tool input');
  const { writer, book } = ctx;
  const plan = book.planTool(position, call.name, call.input, replay);
  if (plan.kind === 'recorded') {
    ctx.take();
    return plan.result;
  }
  if (plan.kind === 'answer') {
    if (plan.intent) {
      await writer.write('tool.intent', plan.intent);
      book.noteHonoured(plan.intent);
    }
    ctx.take();
    await writer.write('tool.result', plan.result);
    return plan.result;
  }
  const key = plan.kind === 'rerun' ? plan.key : toolKey(writer.task, position);
  if (plan.kind === 'fresh') {
    const intent: ToolIntentBody = { name: call.name, call: position, key, replay };
    if (call.input !== undefined) intent.input = call.input;
    await writer.write('tool.intent', intent);
  }
  // From here the position is taken: its intent is recorded.
  ctx.take();
  const toolCall: ToolCall = { name: call.name, call: position, key };
  if (call.input !== undefined) toolCall.input = call.input;
  const result = await run(ctx.guard, fn, toolCall);
  await writer.write('tool.result', result);
  return result;
}

async function run(guard: OwnerGuard, fn: ToolFn, call: ToolCall): Promise<ToolResult> {
  const result: ToolResult = { call: call.call, key: call.key };
  let output: Json | undefined;
  try {
    output = await guard.whileToolRuns(async () => fn(call));
  } catch (err) {
    result.error = err instanceof Error ? err.message : String(err);
    return result;
  }
  // Undefined is "no output" (Go's nil RawMessage); anything else must be a JSON value.
  if (output !== undefined) {
    assertJson(output, `output of tool ${call.name}`);
    result.output = output;
  }
  return result;
}
