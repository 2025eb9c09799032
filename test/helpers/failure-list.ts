/**
 * Names what failed once more at the very end of a run, after every other report (the fault
 * suite's table included). The default reporter lists failures before its summary, and a CI log
 * kept only by its tail then shows the fault table and not which test broke; this list is the
 * last thing printed, one line a failure, so the tail of any log names them.
 */
import type { Reporter, SerializedError, TestModule } from 'vitest/node';

export interface Failure {
  /** The test file, relative to the project. */
  file: string;
  /** The test's full name, or null when the file itself failed (a hook, an import). */
  test: string | null;
  /** The first line of the first error. */
  message: string;
}

/** The lines printed for `failures` and `unhandled` errors; none when nothing failed. */
export function failureList(failures: readonly Failure[], unhandled: readonly string[]): string[] {
  if (failures.length === 0 && unhandled.length === 0) return [];
  const lines = [`Failed (${failures.length + unhandled.length}):`];
  for (const f of failures) lines.push(`  ${f.file}${f.test === null ? '' : ` > ${f.test}`}: ${f.message}`);
  for (const message of unhandled) lines.push(`  unhandled error: ${message}`);
  return lines;
}

/** The first line of an error's message, cut to one readable line. */
export function firstLine(error: { message?: string; name?: string } | undefined): string {
  const text = error?.message?.trim() || error?.name || 'no message';
  const line = text.split('\n', 1)[0]!;
  return line.length > 200 ? `${line.slice(0, 199)}…` : line;
}

/** Every failed test, and every file that failed outside its tests, of a run. */
export function failuresOf(modules: ReadonlyArray<TestModule>): Failure[] {
  const failures: Failure[] = [];
  for (const module of modules) {
    const file = module.relativeModuleId;
    for (const error of module.errors()) failures.push({ file, test: null, message: firstLine(error) });
    for (const test of module.children.allTests()) {
      const result = test.result();
      if (result.state !== 'failed') continue;
      failures.push({ file, test: test.fullName, message: firstLine(result.errors[0]) });
    }
  }
  return failures;
}

export default class FailureListReporter implements Reporter {
  onTestRunEnd(modules: ReadonlyArray<TestModule>, unhandledErrors: ReadonlyArray<SerializedError>): void {
    const lines = failureList(failuresOf(modules), unhandledErrors.map(firstLine));
    if (lines.length > 0) process.stdout.write(`\n${lines.join('\n')}\n`);
  }
}
