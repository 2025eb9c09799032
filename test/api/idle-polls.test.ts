import { describe, expect, it } from 'vitest';
import { IdlePolls } from '../../src/api/idle-polls.js';

describe('IdlePolls', () => {
  it('an environment never seen counts as idle', () => {
    expect(new IdlePolls().idle('env_a')).toBe(true);
  });

  it('a first read that found work makes it busy; one that found nothing makes it idle again', () => {
    const polls = new IdlePolls();
    polls.note('env_a', true);
    expect(polls.idle('env_a')).toBe(false);
    expect(polls.idle('env_b')).toBe(true);
    polls.note('env_a', false);
    expect(polls.idle('env_a')).toBe(true);
  });
});
