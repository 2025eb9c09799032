/**
 * The conversation rules the Messages API enforces, as a pure check: the fake API in
 * messages-server.ts applies it to every request, and history tests apply it to what
 * buildMessages produces, so "the API would accept this" is asserted the same way in both.
 *
 * Rules: a non-empty list; roles alternate, starting with user; no message is empty; every
 * tool_use of an assistant message is answered by a tool_result in the next message, which is
 * a user message whose tool_result blocks come first; no tool_result answers anything but a
 * tool_use of the message just before it, and none answers one twice; tool_use ids are unique.
 */

type Block = { type?: unknown; id?: unknown; tool_use_id?: unknown };

/** Every rule `messages` breaks, in order; empty when the API would take it. */
export function conversationProblems(messages: unknown): string[] {
  if (!Array.isArray(messages) || messages.length === 0) return ['messages must be a non-empty array'];
  const problems: string[] = [];
  const seenToolUses = new Set<string>();
  let previousToolUses: string[] = [];
  messages.forEach((message: { role?: unknown; content?: unknown }, i) => {
    const expected = i % 2 === 0 ? 'user' : 'assistant';
    if (message?.role !== expected) {
      problems.push(`messages[${i}]: role ${JSON.stringify(message?.role)} where ${expected} must come`);
    }
    const content = message?.content;
    const blocks: Block[] =
      typeof content === 'string' ? [{ type: 'text' }] : Array.isArray(content) ? content : [];
    if (blocks.length === 0) problems.push(`messages[${i}]: content is empty`);

    // The tool_results here must answer exactly the previous message's tool_uses, and lead.
    const answered = new Set<string>();
    let leading = true;
    blocks.forEach((block, j) => {
      if (block?.type !== 'tool_result') {
        leading = false;
        return;
      }
      const id = String(block.tool_use_id);
      if (!leading) problems.push(`messages[${i}].content[${j}]: tool_result ${id} follows other content`);
      if (message.role !== 'user')
        problems.push(`messages[${i}].content[${j}]: tool_result in a ${message.role} message`);
      if (!previousToolUses.includes(id)) {
        problems.push(
          `messages[${i}].content[${j}]: tool_result ${id} answers no tool_use of messages[${i - 1}]`,
        );
      } else if (answered.has(id)) {
        problems.push(`messages[${i}].content[${j}]: tool_result ${id} answers its tool_use twice`);
      }
      answered.add(id);
    });
    for (const id of previousToolUses) {
      if (!answered.has(id))
        problems.push(`messages[${i - 1}]: tool_use ${id} has no tool_result in messages[${i}]`);
    }

    previousToolUses = blocks.filter((b) => b?.type === 'tool_use').map((b) => String(b.id));
    for (const id of previousToolUses) {
      if (seenToolUses.has(id)) problems.push(`messages[${i}]: tool_use id ${id} is used twice`);
      seenToolUses.add(id);
    }
  });
  for (const id of previousToolUses) {
    problems.push(`messages[${messages.length - 1}]: tool_use ${id} has no tool_result (no message follows)`);
  }
  return problems;
}
