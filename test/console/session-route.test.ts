import { describe, expect, it } from 'vitest';
import { postEvents, settleTurn } from '../../src/loop/index.js';
import { claim } from '../../src/queue/index.js';
import { consoleSession, html } from '../helpers/console.js';
import { useTestDb } from '../helpers/db.js';
import { setupSession } from '../helpers/factories.js';
import { apiSession } from '../helpers/sessions.js';

const XSS = '<script>alert(1)</script>';

describe('the console’s session page', () => {
  const t = useTestDb('pglite');

  it('shows the session’s facts, its events as a timeline, its work items and a link to its journal', async () => {
    const { sessionId } = await apiSession(t.db);
    await postEvents(
      t.db,
      sessionId,
      [{ type: 'user.message', content: [{ type: 'text', text: `list ${XSS}` }] }],
      {
        kind: 'api',
      },
    );
    const item = await claim(t.db, 'model_turn', 60_000);
    await settleTurn(
      t.db,
      item!,
      0,
      {
        kind: 'response',
        inputSeq: 1,
        content: [{ type: 'tool_use', id: 'toolu_1', name: 'bash', input: { command: 'ls' } }],
        stopReason: 'tool_use',
        usage: { input_tokens: 5, output_tokens: 1 },
      },
      { isCustom: () => false, evaluate: () => ({ evaluated_permission: 'allow' }) },
    );
    const page = await html(await (await consoleSession(t.db)).page(`/console/sessions/${sessionId}`));
    expect(page).toContain('test agent');
    expect([...page.matchAll(/<th scope="row"><code>([a-z._]+)<\/code><\/th>/g)].map((m) => m[1])).toEqual([
      'user.message',
      'agent.tool_use',
      'session.status_idle',
    ]);
    expect(page).toContain('bash({&quot;command&quot;:&quot;ls&quot;})');
    expect(page).toContain(`href="/console/work/${item!.id}"`);
    expect(page).toContain(`href="/console/journal?run=${sessionId}"`);
    expect(page).not.toContain(XSS);
  });

  it('a platform-lane session is shown as the platform’s own; an unknown one is the console’s 404', async () => {
    const { sessionId } = await setupSession(t.db);
    const s = await consoleSession(t.db);
    expect(await html(await s.page(`/console/sessions/${sessionId}`))).toContain(
      'Opened by the platform lane',
    );
    expect((await s.page('/console/sessions/nope')).status).toBe(404);
  });
});
