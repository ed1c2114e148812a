/**
 * docs/errors.md's "Codes" table against the catalogue (src/core/errors.ts), the only source of the codes svc answers
 * with: every code listed with its status, and no code the catalogue does not have.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'node:test';
import { ERROR_CATALOGUE } from '../../src/core/errors.ts';
import { ROOT } from '../support/process.ts';

test('docs/errors.md lists every catalogue code with its status, and no other', () => {
  const doc = readFileSync(join(ROOT, 'docs', 'errors.md'), 'utf8');
  const codes = doc.split('\n## Codes\n')[1]!.split('\n## ')[0]!;
  // A row: | `code` | status, perhaps with a note (`502 (529 on the messages wire)`) | meaning |
  const documented = new Map([...codes.matchAll(/^\| `([a-z_]+)` \| (\d{3})\b/gm)].map((match) => [match[1]!, Number(match[2])]));
  const catalogue = new Map(Object.entries(ERROR_CATALOGUE).map(([code, entry]) => [code, entry.status as number]));
  assert.deepEqual([...documented.keys()].sort(), [...catalogue.keys()].sort());
  for (const [code, status] of catalogue) assert.equal(documented.get(code), status, `the status of ${code}`);
});
