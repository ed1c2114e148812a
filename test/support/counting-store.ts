/** A store wrapper for tests that count how often a repository reaches SQLite. */
import type { Store } from '../../src/store/store.ts';

/** The real in-memory store, with its reads and deferred writes counted. */
export function countingStore(store: Store) {
  const counts = { reads: 0, deferred: 0 };
  const wrapped: Store = {
    read: (fn) => {
      counts.reads += 1;
      return store.read(fn);
    },
    write: (fn) => store.write(fn),
    writeDeferred: (fn, options) => {
      counts.deferred += 1;
      store.writeDeferred(fn, options);
    },
    writeDeferredSteps: (plan) => store.writeDeferredSteps(plan),
    commitIfOverdue: () => store.commitIfOverdue(),
    committed: () => store.committed(),
    flush: () => store.flush(),
    close: () => store.close(),
    get schemaVersion() {
      return store.schemaVersion;
    },
    get filePath() {
      return store.filePath;
    },
    get isOpen() {
      return store.isOpen;
    },
    get writeGeneration() {
      return store.writeGeneration;
    },
    get answersWaitForCommit() {
      return store.answersWaitForCommit;
    },
  };
  return { store: wrapped, counts };
}
