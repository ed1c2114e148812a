/** One-time tokens never reach the request log (docs/accounts.md). */
import assert from 'node:assert/strict';
import test from 'node:test';
import { redactUrl } from '../../src/http/log-redaction.ts';
import { build, logSink } from '../support/build.ts';

test('token paths and token query parameters are redacted; other URLs are untouched', () => {
  assert.equal(redactUrl('/api/v1/invites/abcDEF_-123/accept'), '/api/v1/invites/[redacted]/accept');
  assert.equal(redactUrl('/api/v1/invites/abc?x=1'), '/api/v1/invites/[redacted]?x=1');
  assert.equal(redactUrl('/api/v1/auth/verify/tok'), '/api/v1/auth/verify/[redacted]');
  assert.equal(redactUrl('/accept-invite?token=secret&next=1'), '/accept-invite?token=[redacted]&next=1');
  assert.equal(redactUrl('/reset-password?a=b&TOKEN=secret'), '/reset-password?a=b&TOKEN=[redacted]');
  assert.equal(redactUrl('/api/v1/runs?limit=5'), '/api/v1/runs?limit=5');
  // A target in absolute form (RFC 9112 3.2.2) is routed by its path, and logged by it.
  assert.equal(redactUrl('http://svc.example/api/v1/invites/abc/accept'), '/api/v1/invites/[redacted]/accept');
  assert.equal(redactUrl('HTTPS://svc.example:8443/api/v1/auth/verify/tok'), '/api/v1/auth/verify/[redacted]');
  assert.equal(redactUrl('http://svc.example?token=secret'), '/?token=[redacted]');
  // Spellings the router does not take (404s) still carry what a client meant as a token: redacted too.
  assert.equal(redactUrl('/api/v1//invites/abc'), '/api/v1//invites/[redacted]');
  assert.equal(redactUrl('//api/v1/auth//verify/tok'), '//api/v1/auth//verify/[redacted]');
  assert.equal(redactUrl('/API/V1/Invites/abc/accept'), '/API/V1/Invites/[redacted]/accept');
  assert.equal(redactUrl('/api/v1/invites%2Fabc'), '/api/v1/invites%2F[redacted]');
  // Letters percent-encoded: the router would decode them; svc refuses such a path with 400 (src/http/percent-encoding.ts),
  // but the refused request's log line is redacted all the same.
  assert.equal(redactUrl('/%61pi/v1/invites/abc'), '/%61pi/v1/invites/[redacted]');
  assert.equal(redactUrl('/api/%761/%69nvites/abc/accept'), '/api/%761/%69nvites/[redacted]/accept');
  assert.equal(redactUrl('/api/v1/auth/%56ERIFY/tok'), '/api/v1/auth/%56ERIFY/[redacted]');
  assert.equal(redactUrl('/api/v1/invitesx/abc'), '/api/v1/invitesx/abc');
});

test('the request log of a real app never contains an invitation token', async (t) => {
  const sink = logSink();
  const { app } = await build(t, { log: sink, overrides: { log: { warn() {} } } });
  const token = 'S3cretT0kenS3cretT0kenS3cretT0kenS3cretT0k';
  await app.inject({ url: `/api/v1/invites/${token}` });
  await app.inject({ url: `/api/v1/auth/verify/${token}` });
  assert.equal((await app.inject({ url: `/%61pi/v1/%69nvites/${token}` })).statusCode, 400);
  const log = sink.text();
  assert.match(log, /\/api\/v1\/invites\/\[redacted\]/);
  assert.ok(!log.includes(token));
});
