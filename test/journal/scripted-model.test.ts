import { describe, expect, it } from 'vitest';
import { ScriptedModel } from '../../src/journal/scripted-model.js';

// Pure: the fake model needs no server.
describe('ScriptedModel', () => {
  it('serves its responses in order, counts them, and fails once the script runs out', async () => {
    const model = new ScriptedModel('a', { b: 2 });
    expect(model.requests()).toBe(0);
    const respond = model.respond; // usable detached, as a ModelFn
    expect(await respond()).toBe('a');
    expect(await respond()).toEqual({ b: 2 });
    expect(model.requests()).toBe(2);
    await expect(respond()).rejects.toThrow(/no response left/);
    expect(model.requests()).toBe(2);
  });
});
