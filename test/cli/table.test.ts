import { describe, expect, it } from 'vitest';
import { formatRecord, formatTable } from '../../src/cli/table.js';

describe('formatTable / formatRecord', () => {
  it('aligns every column to its widest cell and shows absent values as -', () => {
    const out = formatTable(
      ['ID', 'STATE', 'NOTE'],
      [
        ['work_1', 'queued', null],
        ['w2', 'active', 'two  words\nand a line'],
      ],
    );
    expect(out).toBe('ID      STATE   NOTE\nwork_1  queued  -\nw2      active  two words and a line\n');
  });

  it('aligns a record’s keys', () => {
    expect(
      formatRecord([
        ['id', 'x'],
        ['last heartbeat', null],
      ]),
    ).toBe('id              x\nlast heartbeat  -\n');
  });
});
