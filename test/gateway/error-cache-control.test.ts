/**
 * Every error answer of the gateway wires (`/v1/*`) carries `cache-control: no-store`, as the embeddings wire's answers
 * do (SPEC 4.2) and every answer of the management API does: an error is about one caller's request, never one for a
 * cache to give another (a 404 is cacheable by default, RFC 9111 4.2.2).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { build } from '../support/build.ts';

test('error answers of every /v1 wire, from validation to upstream failures and unknown routes, are cache-control: no-store', async (t) => {
  const { app } = await build(t);
  const cases: Array<{ method: 'GET' | 'POST'; url: string; payload?: object; status: number }> = [
    { method: 'POST', url: '/v1/embeddings', payload: { model: 'text-embedding-3-small' }, status: 400 },
    { method: 'POST', url: '/v1/embeddings', payload: { model: 'text-embedding-mock-429', input: 'x' }, status: 429 },
    { method: 'POST', url: '/v1/embeddings', payload: { model: 'text-embedding-mock-5xx', input: 'x' }, status: 502 },
    { method: 'POST', url: '/v1/chat/completions', payload: { model: 'gpt-4o-mini' }, status: 400 },
    { method: 'POST', url: '/v1/chat/completions', payload: { model: 'gpt-4o-mini-mock-5xx', messages: [{ role: 'user', content: 'hi' }] }, status: 502 },
    { method: 'POST', url: '/v1/responses', payload: { model: 'gpt-4o-mini' }, status: 400 },
    { method: 'POST', url: '/v1/messages', payload: { model: 'claude-sonnet-4-5' }, status: 400 },
    { method: 'GET', url: '/v1/models/no-such-model', status: 404 },
    { method: 'GET', url: '/v1/no-such-route', status: 404 },
  ];
  for (const { method, url, payload, status } of cases) {
    const response = await app.inject({ method, url, ...(payload ? { payload } : {}) });
    const label = `${method} ${url} ${JSON.stringify(payload ?? null)}`;
    assert.equal(response.statusCode, status, label);
    assert.equal(response.headers['cache-control'], 'no-store', label);
  }
});
