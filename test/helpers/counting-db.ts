/**
 * A test database that counts the statements run on it (outside transactions, which pass
 * through), for tests that prove how many round trips an operation costs. The first
 * `failFirst` statements fail without reaching the database, as a dropped connection would.
 */
import type { Database } from '../../src/db/handle.js';

export interface CountingDb {
  db: Database;
  /** Statements run so far; a test may reset it. */
  statements: number;
}

export function countingDb(db: Database, failFirst = 0): CountingDb {
  let failures = failFirst;
  const counter: CountingDb = {
    statements: 0,
    db: {
      execute: (query) => {
        counter.statements++;
        if (failures > 0) {
          failures--;
          return Promise.reject(new Error('connection terminated'));
        }
        return db.execute(query);
      },
      transaction: (fn) => db.transaction(fn),
    },
  };
  return counter;
}
