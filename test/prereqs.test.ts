/**
 * The test command's provisioning decision (`helpers/prereqs.ts`): install only as root on a
 * Debian-like Linux with apt-get; anywhere else one line naming what to install.
 */
import { describe, expect, it } from 'vitest';
import { type Machine, type Prereq, plan } from './helpers/prereqs.js';

const chromium: Prereq = {
  name: 'Chromium',
  pkg: 'chromium',
  neededBy: "the console's browser tests",
  envVar: 'LEASEHOLD_CHROMIUM',
};
const nats: Prereq = {
  name: 'nats-server',
  pkg: 'nats-server',
  neededBy: 'the journal tests',
  envVar: 'NATS_SERVER_BIN',
};
const debianRoot: Machine = { isRoot: true, hasApt: true, platform: 'linux' };

describe('plan', () => {
  it('does nothing when nothing is missing, wherever it runs', () => {
    expect(plan([], debianRoot)).toEqual({ kind: 'ready' });
    expect(plan([], { isRoot: false, hasApt: false, platform: 'darwin' })).toEqual({ kind: 'ready' });
  });

  it('installs as root on Debian with apt-get, saying what and why on one line', () => {
    expect(plan([chromium, nats], debianRoot)).toEqual({
      kind: 'install',
      say: "leasehold tests: installing chromium nats-server with apt-get (needed by the console's browser tests and the journal tests)",
    });
  });

  it.each<[string, Machine]>([
    ['not root', { isRoot: false, hasApt: true, platform: 'linux' }],
    ['no apt-get', { isRoot: true, hasApt: false, platform: 'linux' }],
    ['macOS', { isRoot: true, hasApt: false, platform: 'darwin' }],
    ['macOS, even with an apt-get on it', { isRoot: true, hasApt: true, platform: 'darwin' }],
  ])('refuses with one line naming what to install: %s', (_, machine) => {
    const decided = plan([chromium], machine);
    expect(decided).toEqual({
      kind: 'refuse',
      say: 'leasehold tests need Chromium: install it (Debian: apt-get install chromium) or set LEASEHOLD_CHROMIUM=/path/to/chromium',
    });
    const both = plan([chromium, nats], machine);
    expect(both.kind).toBe('refuse');
    if (both.kind === 'refuse') {
      expect(both.say).not.toContain('\n');
      expect(both.say).toContain('apt-get install chromium nats-server');
      expect(both.say).toContain('NATS_SERVER_BIN=/path/to/nats-server');
    }
  });

  it('installs nothing when the override points at a missing program, even as root', () => {
    expect(plan([{ ...chromium, badOverride: '/opt/chromium' }], debianRoot)).toEqual({
      kind: 'refuse',
      say: 'leasehold tests need Chromium: LEASEHOLD_CHROMIUM=/opt/chromium does not exist; point it at the program or unset it',
    });
  });
});
