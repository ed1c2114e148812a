/** Password hashing (docs/accounts.md "Passwords") and e-mail templates and transports (SPEC 5.5). */
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import test from 'node:test';
import { createPasswordHasher, normalizePassword } from '../../src/accounts/passwords.ts';
import { orgNameForSignup } from '../../src/accounts/org-names.ts';
import { inviteEmail, passwordResetEmail, verifyEmail } from '../../src/email/templates.ts';
import { consoleMailer, EmailDeliveryError, providerMailer } from '../../src/email/transport.ts';
import { loadConfig } from '../../src/config.ts';
import { build } from '../support/build.ts';

test('production hashes are scrypt N=2^17, r=8, p=1 with a 16-byte salt, and verify', async () => {
  const hasher = createPasswordHasher();
  const hash = await hasher.hash('correct horse battery');
  const [scheme, logN, r, p, salt, key] = hash.split('$');
  assert.deepEqual([scheme, logN, r, p], ['scrypt', '17', '8', '1']);
  assert.equal(Buffer.from(salt!, 'base64url').length, 16);
  assert.equal(Buffer.from(key!, 'base64url').length, 32);
  assert.notEqual(hash, await hasher.hash('correct horse battery')); // per-hash salt
  assert.deepEqual(await hasher.verify('correct horse battery', hash), { ok: true, needsRehash: false });
  assert.deepEqual(await hasher.verify('correct horse batterY', hash), { ok: false, needsRehash: false });
});

test('sign-ins are hashed before account management waiting for the same slots', async () => {
  const hasher = createPasswordHasher({ costLog2: 12, concurrency: 1 });
  const stored = await hasher.hash('correct horse battery');
  const finished: string[] = [];
  const note = (name: string) => () => void finished.push(name);
  const work = [
    ...[1, 2, 3, 4].map((n) => hasher.hash(`temporary-${n}`, 'account').then(note(`account ${n}`))),
    hasher.verify('correct horse battery', stored).then(note('sign-in')),
    hasher.hash('new-account', 'account').then(note('account 5')),
  ];
  await Promise.all(work);
  // The first account hash had the slot; the sign-in, queued after three more, came next.
  assert.deepEqual(finished, ['account 1', 'sign-in', 'account 2', 'account 3', 'account 4', 'account 5']);
});

test('no truncation: passwords differing only after 72 characters differ; weaker stored hashes ask for a re-hash', async () => {
  const cheap = createPasswordHasher({ costLog2: 10 });
  const long = 'a'.repeat(100);
  const hash = await cheap.hash(long);
  assert.equal((await cheap.verify(`${'a'.repeat(99)}b`, hash)).ok, false);
  assert.equal((await cheap.verify(long, hash)).ok, true);
  const stronger = createPasswordHasher({ costLog2: 11 });
  assert.deepEqual(await stronger.verify(long, hash), { ok: true, needsRehash: true });
  assert.equal((await cheap.verify(long, 'not-a-hash')).ok, false);
});

test('password rules: 8 to 256 characters after NFKC, counted in code points', () => {
  assert.throws(() => normalizePassword('1234567'), /8 to 256/);
  assert.equal(normalizePassword('12345678'), '12345678');
  assert.equal(normalizePassword('😀'.repeat(8)).length, 16); // 8 code points are enough
  assert.throws(() => normalizePassword('x'.repeat(257)), /8 to 256/);
  assert.equal(normalizePassword('ｐａｓｓｗｏｒｄ'), 'password'); // full-width folds to ASCII
});

test('org names: the domain, or the person for generic providers', () => {
  assert.equal(orgNameForSignup('ada@acme.io', 'Ada'), 'acme.io');
  assert.equal(orgNameForSignup('ada@gmail.com', 'Ada'), "Ada's org");
  assert.equal(orgNameForSignup('ada@Outlook.com', ' Ada L '), "Ada L's org");
  // Cut at 100 UTF-16 units, never between the halves of a surrogate pair.
  const emoji = orgNameForSignup(`x@${'a'.repeat(99)}\u{1F600}.io`, 'X');
  assert.equal(emoji, 'a'.repeat(99));
  assert.equal(orgNameForSignup(`x@${'a'.repeat(98)}\u{1F600}.io`, 'X'), `${'a'.repeat(98)}\u{1F600}`);
  assert.equal(orgNameForSignup(`x@${'b'.repeat(120)}.io`, 'X'), 'b'.repeat(100));
});

test('templates are pure, carry the link in text and HTML, and escape HTML', () => {
  const invite = inviteEmail({ orgName: '<Acme & "Co">', inviterName: '<b>Eve</b>', role: 'admin', acceptUrl: 'https://app.test/accept-invite?token=abc&x=1', expiresAt: Date.UTC(2026, 11, 1) });
  assert.match(invite.subject, /<Acme & "Co">/);
  assert.match(invite.text, /Accept the invitation: https:\/\/app\.test\/accept-invite\?token=abc&x=1/);
  assert.match(invite.text, /2026-12-01/);
  assert.ok(invite.html.includes('&lt;Acme &amp; &quot;Co&quot;&gt;'));
  assert.ok(invite.html.includes('&lt;b&gt;Eve&lt;/b&gt;'));
  assert.ok(!invite.html.includes('<b>Eve'));
  assert.ok(invite.html.includes('href="https://app.test/accept-invite?token=abc&amp;x=1"'));
  assert.deepEqual(invite, inviteEmail({ orgName: '<Acme & "Co">', inviterName: '<b>Eve</b>', role: 'admin', acceptUrl: 'https://app.test/accept-invite?token=abc&x=1', expiresAt: Date.UTC(2026, 11, 1) }));
  assert.match(verifyEmail({ name: 'Ada', verifyUrl: 'https://app.test/verify-email?token=t' }).text, /verify-email\?token=t/);
  assert.match(passwordResetEmail({ name: 'Ada', resetUrl: 'https://app.test/reset-password?token=t', expiresInMinutes: 60 }).text, /expires in 60 minutes/);
});

test('console transport writes the subject line and the plain-text body with its links', async () => {
  let written = '';
  const mailer = consoleMailer((text) => (written += text), 'svc <no-reply@localhost>');
  await mailer.send({ to: 'ada@example.test', ...verifyEmail({ name: 'Ada', verifyUrl: 'https://app.test/verify-email?token=abc' }) });
  assert.match(written, /^svc: e-mail to ada@example\.test: Verify your e-mail address for svc\n/);
  assert.match(written, /https:\/\/app\.test\/verify-email\?token=abc/);
});

test('provider transport posts {from, to, subject, text, html} with the key; non-2xx and no answer are failures', async (t) => {
  const received: Array<{ auth: string | undefined; body: any }> = [];
  let status = 202;
  const server = createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => (raw += c));
    req.on('end', () => {
      received.push({ auth: req.headers.authorization, body: JSON.parse(raw) });
      res.statusCode = status;
      res.end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => server.close());
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/send`;
  const mailer = providerMailer({ apiUrl: url, apiKey: 'prov-key', from: 'svc <no-reply@svc.test>' });
  const message = { to: 'ada@example.test', subject: 'Hi', text: 'hello', html: '<p>hello</p>' };
  await mailer.send(message);
  assert.deepEqual(received[0], { auth: 'Bearer prov-key', body: { from: 'svc <no-reply@svc.test>', to: ['ada@example.test'], subject: 'Hi', text: 'hello', html: '<p>hello</p>' } });
  status = 500;
  await assert.rejects(mailer.send(message), EmailDeliveryError);
  const unreachable = providerMailer({ apiUrl: 'http://127.0.0.1:9/v1/send', apiKey: 'k', from: 'x', timeoutMs: 500 });
  await assert.rejects(unreachable.send(message), EmailDeliveryError);
});

test('configuration: the provider needs its URL; links default to the configured address; bad base URLs refused', () => {
  assert.throws(() => loadConfig({ EMAILPROV_API_KEY: 'k' }, { dataDir: null }), /SVC_EMAIL_API_URL: required/);
  const config = loadConfig({ SVC_HOST: '0.0.0.0', SVC_PORT: '9000' }, { dataDir: null });
  assert.equal(config.accounts.linkBaseUrl, 'http://127.0.0.1:9000');
  assert.equal(config.accounts.emailFrom, 'svc <no-reply@localhost>');
  assert.equal(loadConfig({ SVC_APP_BASE_URL: 'https://app.example.com/' }, { dataDir: null }).accounts.linkBaseUrl, 'https://app.example.com');
  assert.throws(() => loadConfig({ SVC_APP_BASE_URL: 'javascript:alert(1)' }, { dataDir: null }), /SVC_APP_BASE_URL/);
  assert.throws(() => loadConfig({ SVC_APP_BASE_URL: 'https://u:p@app.example.com' }, { dataDir: null }), /SVC_APP_BASE_URL/);
});

test('SVC_EMAIL_FROM must be one sender: a configuration error naming the variable stops the start otherwise', async (t) => {
  const refused: Array<[string, RegExp]> = [
    ['svc <no-reply@svc.example>\r\nBcc: list@evil.example', /must not contain control characters, line separators/],
    ['svc <no-reply@svc.example>\u2028Bcc: list@evil.example', /must not contain control characters, line separators/],
    ['svc <no-reply@svc.example>, evil <list@evil.example>', /must be an address or a name and an address in angle brackets/],
    ['svc, evil <no-reply@svc.example>', /must be an address or a name and an address in angle brackets/],
    ['no-reply,list@evil.example', /must be an address or a name and an address in angle brackets/],
    ['no-reply', /the address must be an e-mail address/],
  ];
  for (const [from, why] of refused) {
    await assert.rejects(build(t, { env: { SVC_EMAIL_FROM: from } }), (error: Error) => {
      assert.match(error.message, /^invalid configuration: SVC_EMAIL_FROM: /, from);
      assert.match(error.message, why, from);
      return true;
    });
  }
  for (const from of ['no-reply@svc.example', 'svc <no-reply@svc.example>', '"svc, Inc." <no-reply@svc.example>', 'Svc Inc. <no-reply@例え.jp>']) {
    assert.equal((await build(t, { env: { SVC_EMAIL_FROM: from } })).config.accounts.emailFrom, from);
  }
});
