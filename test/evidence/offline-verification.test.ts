/**
 * docs/evidence.md "Verifying a packet offline" gives an auditor a script to check an evidence packet without svc. It is
 * taken from the docs as written and run with node on packets svc exported, so the procedure the docs state is the one
 * that works: on text that is not ASCII, numbers JSON writes in more than one way, and a run's outcome.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'node:test';
import { build, json, type Built } from '../support/build.ts';
import { completion, sendJson, startFakeUpstream } from '../support/fake-upstream.ts';
import { ROOT, tempDir } from '../support/process.ts';

/** The fenced script of the docs' offline verification, as an auditor would copy it. */
function documentedVerifier(): string {
  const doc = readFileSync(join(ROOT, 'docs', 'evidence.md'), 'utf8');
  const section = doc.slice(doc.indexOf('**Verifying a packet offline.**'));
  const script = /```js\n([\s\S]*?)```/.exec(section.slice(0, section.indexOf('\n## ')));
  assert.ok(script, 'docs/evidence.md gives the verification as a script');
  return script[1]!;
}

type Verified = { status: number | null; stdout: string };

test('the offline verification docs/evidence.md gives verifies a packet svc exported, with text that is not ASCII and numbers in every JSON form, and finds an edit of it', async (t) => {
  const upstream = await startFakeUpstream(t, (_req, res) => sendJson(res, 200, completion('Grüße aus 東京')));
  const built: Built = await build(t, { env: { CHATCOMP_API_KEY: 'sk-upstream', CHATCOMP_BASE_URL: upstream.baseUrl } });
  const chat = await built.app.inject({ method: 'POST', url: '/v1/chat/completions', payload: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Où est la gare ?' }] } });
  assert.equal(chat.statusCode, 200, chat.body);
  const runId = String(chat.headers['x-svc-run-id']);
  // What SDK clients append: any JSON, here what canonical JSON writers disagree on (escapes, exponents, key order).
  const payload = {
    toolName: 'wire',
    level: 4,
    payload: { note: 'Grüße <b> & 東京 \u2028 😀', usd: 0.0000015, tiny: 1.5e-7, big: 1e21, whole: 2.0, neg: -0.5, '\uff01': 1, '😀': 2, z: null },
  };
  const appended = await built.app.inject({ method: 'POST', url: '/api/v1/trace', payload: { runId, type: 'side_effect.planned', payload } });
  assert.equal(appended.statusCode, 201, appended.body);
  const packet = json(await built.app.inject({ url: `/api/v1/runs/${runId}/evidence-packet` }));
  assert.equal(packet.integrity.ok, true, JSON.stringify(packet.integrity));
  assert.ok(packet.run.priced && packet.run.costUsd > 0 && packet.run.costUsd < 1e-4, `a priced run: ${packet.run.costUsd}`);

  const dir = tempDir(t, 'svc-offline-');
  const script = join(dir, 'verify-packet.mjs');
  writeFileSync(script, documentedVerifier());
  /** The documented script's answer on the packet, edited by `edit` as someone with the file would. */
  const verify = (edit: (copy: typeof packet) => void = () => {}): Verified => {
    const copy = structuredClone(packet);
    edit(copy);
    const file = join(dir, 'packet.json');
    writeFileSync(file, JSON.stringify(copy));
    const { status, stdout } = spawnSync(process.execPath, [script, file], { encoding: 'utf8' });
    return { status, stdout };
  };

  const whole = verify();
  assert.equal(whole.status, 0, whole.stdout);
  assert.equal(whole.stdout.trim(), `ok: ${packet.events.length} events, head ${packet.integrity.headHash}`);

  const appendedSeq = packet.events.at(-1).seq;
  const oneByte = verify((copy) => {
    copy.events.at(-1).payload.payload.note = payload.payload.note.replace('ß', 's');
  });
  assert.equal(oneByte.status, 1, oneByte.stdout);
  assert.match(oneByte.stdout, new RegExp(`^broken at seq ${appendedSeq}: `));

  const closing = packet.events.find((event: { type: string }) => event.type === 'run.completed');
  const cost = verify((copy) => {
    copy.run.costUsd = 0;
  });
  assert.equal(cost.status, 1, cost.stdout);
  assert.equal(cost.stdout.trim(), `broken at seq ${closing.seq}: the run's costUsd does not match its run.completed event`);
});
