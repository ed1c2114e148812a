/** Bad input gets a clear 4xx in each surface's shape and changes nothing; limits and rate limits per surface. */
import assert from 'node:assert/strict';
import test from 'node:test';
import { gzipSync } from 'node:zlib';
import { build, json } from '../support/build.ts';
import { completedOutcome, runStart } from '../support/run-outcome.ts';
import { chainHash } from '../../src/core/canonical-json.ts';
import { sha256Hex } from '../../src/core/ids.ts';

const jsonHeaders = { 'content-type': 'application/json' };

test('malformed JSON and prototype-pollution keys are 400s that create nothing', async (t) => {
  const { app } = await build(t);
  const cases = ['{"name":', '{"__proto__":{"admin":true},"name":"x"}', '{"constructor":{"prototype":{"admin":true}},"name":"x"}', '[]'];
  for (const payload of cases) {
    const response = await app.inject({ method: 'POST', url: '/api/v1/keys', headers: jsonHeaders, payload });
    assert.equal(response.statusCode, 400, payload);
    assert.equal(typeof json(response).error.code, 'string');
  }
  assert.equal(json(await app.inject({ url: '/api/v1/keys' })).pagination.total, 0);
  const chat = await app.inject({ method: 'POST', url: '/v1/chat/completions', headers: jsonHeaders, payload: '{"model":"x","messages":[{"__proto__":{}}]}' });
  assert.equal(chat.statusCode, 400);
  assert.equal(json(chat).error.type, 'invalid_request_error');
  const messages = await app.inject({ method: 'POST', url: '/v1/messages', headers: jsonHeaders, payload: '{"model":' });
  assert.equal(messages.statusCode, 400);
  assert.equal(json(messages).type, 'error');
  assert.equal(({} as Record<string, unknown>).admin, undefined);
  const wrongType = await app.inject({ method: 'POST', url: '/api/v1/keys', headers: { 'content-type': 'text/plain' }, payload: 'name=x' });
  assert.equal(wrongType.statusCode, 415);
  assert.equal(json(wrongType).error.code, 'unsupported_media_type');
  assert.equal(json(await app.inject({ url: '/api/v1/keys' })).pagination.total, 0);
});

test('a body that is not JSON as sent (text/plain, or compressed with a Content-Encoding svc does not decode) is a 415 in the surface shape that creates nothing', async (t) => {
  const { app } = await build(t);
  const runsTotal = async () => json(await app.inject({ url: '/api/v1/runs' })).pagination.total;
  const chat = JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'compressed' }] });
  const cases: Array<[string, Record<string, string>, string | Buffer]> = [
    ['text/plain', { 'content-type': 'text/plain' }, chat],
    ['gzip', { ...jsonHeaders, 'content-encoding': 'gzip' }, gzipSync(chat)],
    ['br', { ...jsonHeaders, 'content-encoding': 'br' }, chat],
  ];
  for (const [label, headers, payload] of cases) {
    const response = await app.inject({ method: 'POST', url: '/v1/chat/completions', headers, payload });
    assert.equal(response.statusCode, 415, label);
    assert.equal(json(response).error.type, 'invalid_request_error', label);
    if (label !== 'text/plain') assert.match(json(response).error.message, /Content-Encoding/, label);
  }
  const messages = await app.inject({ method: 'POST', url: '/v1/messages', headers: { ...jsonHeaders, 'content-encoding': 'gzip' }, payload: gzipSync('{}') });
  assert.equal(messages.statusCode, 415);
  assert.equal(json(messages).type, 'error');
  const key = await app.inject({ method: 'POST', url: '/api/v1/keys', headers: { ...jsonHeaders, 'content-encoding': 'gzip' }, payload: gzipSync('{"name":"x"}') });
  assert.equal(key.statusCode, 415);
  assert.equal(json(key).error.code, 'unsupported_media_type');
  assert.equal(json(await app.inject({ url: '/api/v1/keys' })).pagination.total, 0);
  assert.equal(await runsTotal(), 0);
  // identity is no encoding at all.
  const plain = await app.inject({ method: 'POST', url: '/v1/chat/completions', headers: { ...jsonHeaders, 'content-encoding': 'identity' }, payload: chat });
  assert.equal(plain.statusCode, 200);
});

test('a JSON body declared in a charset other than UTF-8 (utf-16, iso-8859-1) is a 415 naming the charset on every JSON route, in its surface shape, and creates nothing; utf-8 and us-ascii are read', async (t) => {
  const { app } = await build(t);
  const runsTotal = async () => json(await app.inject({ url: '/api/v1/runs' })).pagination.total;
  const chat = JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'un café, s\'il vous plaît' }] });
  const refused: Array<[string, Buffer]> = [
    ['utf-16', Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(chat, 'utf16le')])],
    ['"UTF-16LE"', Buffer.from(chat, 'utf16le')],
    // Read as UTF-8, the é became U+FFFD and the request was served with a prompt other than the one sent.
    ['iso-8859-1', Buffer.from(chat, 'latin1')],
  ];
  const routes: Array<[string, (body: any) => void]> = [
    ['/v1/chat/completions', (body) => assert.equal(body.error.type, 'invalid_request_error')],
    ['/v1/responses', (body) => assert.equal(body.error.type, 'invalid_request_error')],
    ['/v1/embeddings', (body) => assert.equal(body.error.type, 'invalid_request_error')],
    ['/v1/messages', (body) => assert.deepEqual([body.type, body.error.type], ['error', 'invalid_request_error'])],
    ['/api/v1/keys', (body) => assert.equal(body.error.code, 'unsupported_media_type')],
  ];
  for (const [charset, payload] of refused) {
    for (const [url, shaped] of routes) {
      const response = await app.inject({ method: 'POST', url, headers: { 'content-type': `application/json; charset=${charset}` }, payload });
      const label = `${url} ${charset}`;
      assert.equal(response.statusCode, 415, label);
      shaped(json(response));
      const message: string = json(response).error.message;
      assert.ok(message.includes(charset.replaceAll('"', '')), `${label}: ${message}`);
    }
  }
  assert.equal(await runsTotal(), 0);
  assert.equal(json(await app.inject({ url: '/api/v1/keys' })).pagination.total, 0);
  for (const contentType of ['application/json; charset=utf-8', 'application/json;charset="UTF-8"', 'application/json; charset=us-ascii', 'Application/JSON; Charset=utf8']) {
    const payload = contentType.includes('ascii') ? chat.replace('é', '\\u00e9').replace('î', '\\u00ee') : chat;
    const response = await app.inject({ method: 'POST', url: '/v1/chat/completions', headers: { 'content-type': contentType }, payload });
    assert.equal(response.statusCode, 200, contentType);
  }
  const key = await app.inject({ method: 'POST', url: '/api/v1/keys', headers: { 'content-type': 'application/json; charset=utf-8' }, payload: '{"name":"café"}' });
  assert.equal(key.statusCode, 201);
  assert.equal(json(key).name ?? json(key).key?.name, 'café');
});

test('a JSON body whose content type names its charset twice is a 415 unless both name UTF-8: the first one alone was read, so charset=utf-8; charset=iso-8859-1 served a Latin-1 body as UTF-8', async (t) => {
  const { app } = await build(t);
  const latin1 = Buffer.from('{"name":"café"}', 'latin1');
  for (const contentType of ['application/json; charset=utf-8; charset=iso-8859-1', 'application/json; charset="utf-8"; charset=utf-16']) {
    const response = await app.inject({ method: 'POST', url: '/api/v1/keys', headers: { 'content-type': contentType }, payload: latin1 });
    assert.equal(response.statusCode, 415, `${contentType}: ${response.body}`);
    assert.equal(json(response).error.code, 'unsupported_media_type');
  }
  assert.equal(json(await app.inject({ url: '/api/v1/keys' })).pagination.total, 0, 'no key was created');
  const twiceUtf8 = await app.inject({ method: 'POST', url: '/api/v1/keys', headers: { 'content-type': 'application/json; charset=utf-8; charset="UTF-8"' }, payload: '{"name":"café"}' });
  assert.equal(twiceUtf8.statusCode, 201, twiceUtf8.body);
});

test('a content type\'s parameters are read per RFC 9110 (token or quoted-string with backslash escapes): a ; or charset= inside a quoted value is text, an escaped charset is unescaped, and a quoted value left open or followed by other text is a 415, never a 500', async (t) => {
  const { app } = await build(t);
  const keys = async () => json(await app.inject({ url: '/api/v1/keys' })).pagination.total;
  const post = (contentType: string, payload: string | Buffer) => app.inject({ method: 'POST', url: '/api/v1/keys', headers: { 'content-type': contentType }, payload });
  // Split on every ';', these were refused for a charset inside a quoted value, or misread with its escape.
  const read = [
    'application/json; foo="a;charset=utf-16"',
    'application/json; foo="a\\";charset=utf-16"',
    'application/json; charset="utf\\-8"',
    'application/json; foo="x;y"; charset="UTF\\-8"; bar=baz',
    'application/json; foo; ; charset=utf-8;',
  ];
  for (const contentType of read) {
    const response = await post(contentType, '{"name":"café"}');
    assert.equal(response.statusCode, 201, `${contentType}: ${response.body}`);
  }
  const created = await keys();
  const latin1 = Buffer.from('{"name":"café"}', 'latin1');
  const refused: Array<[string, string | RegExp]> = [
    ['application/json; charset="utf-1\\6"', 'charset=utf-16'],
    ['application/json; foo="a;b"; charset=iso-8859-1', 'charset=iso-8859-1'],
    ['application/json; charset=utf-8; foo="x\\"y"; charset="iso-8859-1"', 'charset=iso-8859-1'],
    // Malformed: whether the charset is text or a parameter depends on the reader, so none is read as UTF-8.
    ['application/json; foo="a;charset=utf-16', /quoted/],
    ['application/json; charset="utf-8\\', /quoted/],
    ['application/json; charset="utf-8"x', /quoted/],
    ['application/json; foo="a"x"; charset=utf-16"', /quoted/],
  ];
  for (const [contentType, named] of refused) {
    const response = await post(contentType, latin1);
    assert.equal(response.statusCode, 415, `${contentType}: ${response.body}`);
    assert.equal(json(response).error.code, 'unsupported_media_type', contentType);
    const message: string = json(response).error.message;
    if (typeof named === 'string') assert.ok(message.includes(named), `${contentType}: ${message}`);
    else assert.match(message, named, contentType);
  }
  assert.equal(await keys(), created, 'no key was created by a refused body');
  const chat = await app.inject({ method: 'POST', url: '/v1/chat/completions', headers: { 'content-type': 'application/json; foo="a;charset=utf-16"' }, payload: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'café' }] }) });
  assert.equal(chat.statusCode, 200, chat.body);
});

test('a JSON body whose bytes are not UTF-8 is a 400 invalid_json in each surface shape that creates nothing, where each bad byte became U+FFFD and the request was served; a U+FFFD sent in UTF-8 is kept', async (t) => {
  const { app } = await build(t);
  const chat = (content: string) => JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content }] });
  const routes: Array<[string, Buffer, (body: any) => void]> = [
    ['/v1/chat/completions', Buffer.from(chat('un café'), 'latin1'), (body) => assert.equal(body.error.type, 'invalid_request_error')],
    ['/v1/messages', Buffer.from(JSON.stringify({ model: 'claude-3-5-haiku-latest', max_tokens: 10, messages: [{ role: 'user', content: 'café' }] }), 'latin1'), (body) => assert.equal(body.type, 'error')],
    // A UTF-16 surrogate encoded as three bytes (CESU-8) is no UTF-8 either.
    ['/v1/embeddings', Buffer.concat([Buffer.from('{"model":"text-embedding-3-small","input":"a'), Buffer.from([0xed, 0xa0, 0x80]), Buffer.from('"}')]), (body) => assert.equal(body.error.type, 'invalid_request_error')],
    ['/api/v1/keys', Buffer.from('{"name":"café"}', 'latin1'), (body) => assert.equal(body.error.code, 'invalid_json')],
  ];
  for (const [url, payload, shaped] of routes) {
    const response = await app.inject({ method: 'POST', url, headers: jsonHeaders, payload });
    assert.equal(response.statusCode, 400, `${url}: ${response.body}`);
    shaped(json(response));
    assert.match(json(response).error.message, /UTF-8/, url);
  }
  assert.equal(json(await app.inject({ url: '/api/v1/runs' })).pagination.total, 0);
  assert.equal(json(await app.inject({ url: '/api/v1/keys' })).pagination.total, 0);
  const replacement = await app.inject({ method: 'POST', url: '/api/v1/keys', headers: jsonHeaders, payload: Buffer.from('{"name":"caf\uFFFD"}', 'utf8') });
  assert.equal(replacement.statusCode, 201, replacement.body);
  assert.equal(json(replacement).key.name, 'caf\uFFFD');
});

test('a JSON body escaping a lone UTF-16 surrogate is a 400 invalid_json in each surface shape that creates nothing, where the data file stored other text than was hashed; escaped pairs are served', async (t) => {
  const { app } = await build(t);
  // JSON.stringify writes a lone surrogate as its escape (\ud800), which JSON.parse turns back into the lone surrogate.
  // Before: served, and its text stored through the data file's driver, which writes a surrogate as three bytes
  // and may cut the text at the next one: a model named so failed its run's integrity ("the run's model does not
  // match its hashed run.started event"), a key named 'ops-ops-ops-ops-\ud800\ud800é' was stored as 'ops-ops-ops-ops-\uFFFD...'.
  const lone = 'ops-ops-ops-ops-\ud800\ud800é-tail';
  const cases: Array<[string, unknown, (body: any) => void]> = [
    ['/v1/chat/completions', { model: `gpt-4o-mini-${lone}`, messages: [{ role: 'user', content: 'hi' }] }, (body) => assert.equal(body.error.type, 'invalid_request_error')],
    ['/v1/chat/completions', { model: 'gpt-4o-mini', stream: true, messages: [{ role: 'user', content: `a\udc00` }] }, (body) => assert.equal(body.error.type, 'invalid_request_error')],
    ['/v1/chat/completions', { model: 'gpt-4o-mini', metadata: { [`k\ud800`]: 'v' }, messages: [{ role: 'user', content: 'hi' }] }, (body) => assert.equal(body.error.type, 'invalid_request_error')],
    ['/v1/responses', { model: 'gpt-4o-mini', input: [{ role: 'user', content: lone }] }, (body) => assert.equal(body.error.type, 'invalid_request_error')],
    ['/v1/embeddings', { model: 'text-embedding-3-small', input: ['ok', lone] }, (body) => assert.equal(body.error.type, 'invalid_request_error')],
    ['/v1/messages', { model: 'claude-3-5-haiku-latest', max_tokens: 10, messages: [{ role: 'user', content: [{ type: 'text', text: lone }] }] }, (body) => assert.equal(body.type, 'error')],
    ['/v1/messages', { model: 'claude-3-5-haiku-latest', max_tokens: 10, stream: true, metadata: { user_id: lone }, messages: [{ role: 'user', content: 'hi' }] }, (body) => assert.equal(body.type, 'error')],
    ['/api/v1/keys', { name: lone }, (body) => assert.equal(body.error.code, 'invalid_json')],
    ['/api/v1/keys', { name: 'ci', appId: `app-\udfff` }, (body) => assert.equal(body.error.code, 'invalid_json')],
  ];
  for (const [url, payload, shaped] of cases) {
    const response = await app.inject({ method: 'POST', url, headers: jsonHeaders, payload: JSON.stringify(payload) });
    assert.equal(response.statusCode, 400, `${url}: ${response.body}`);
    shaped(json(response));
    assert.equal(json(response).error.code ?? 'invalid_json', 'invalid_json', url);
    assert.match(json(response).error.message, /lone UTF-16 surrogate/, url);
  }
  assert.equal(json(await app.inject({ url: '/api/v1/runs' })).pagination.total, 0);
  assert.equal(json(await app.inject({ url: '/api/v1/keys' })).pagination.total, 0);

  // Escapes of whole characters are kept: a pair (an emoji, as Python's json.dumps writes it) and a Hangul syllable.
  const pair = await app.inject({ method: 'POST', url: '/api/v1/keys', headers: jsonHeaders, payload: '{"name":"ci \\ud83d\\ude80 \\ud55c"}' });
  assert.equal(pair.statusCode, 201, pair.body);
  assert.equal(json(pair).key.name, 'ci \u{1F680} \ud55c');
  const prompt = await app.inject({ method: 'POST', url: '/v1/chat/completions', headers: jsonHeaders, payload: '{"model":"gpt-4o-mini","messages":[{"role":"user","content":"\\uD83D\\uDE80"}]}' });
  assert.equal(prompt.statusCode, 200, prompt.body);
});

test('bodies nested more than 128 levels deep are 400s in each surface shape that create nothing', async (t) => {
  const { app } = await build(t);
  // `extra` nests `levels` arrays inside the body's object: the body is 1 + levels deep.
  const nested = (levels: number) => `${'['.repeat(levels)}${']'.repeat(levels)}`;
  const chat = (levels: number) => `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"deep"}],"extra":${nested(levels)}}`;
  const runsTotal = async () => json(await app.inject({ url: '/api/v1/runs' })).pagination.total;

  const atTheBound = await app.inject({ method: 'POST', url: '/v1/chat/completions', headers: jsonHeaders, payload: chat(127) });
  assert.equal(atTheBound.statusCode, 200, 'a body 128 levels deep is accepted');
  const before = await runsTotal();
  for (const levels of [128, 50_000]) {
    const response = await app.inject({ method: 'POST', url: '/v1/chat/completions', headers: jsonHeaders, payload: chat(levels) });
    assert.equal(response.statusCode, 400, `${levels} levels`);
    assert.equal(json(response).error.type, 'invalid_request_error');
    assert.equal(json(response).error.code, 'invalid_json');
    assert.match(json(response).error.message, /more than 128 levels deep/);
  }
  const messages = await app.inject({
    method: 'POST',
    url: '/v1/messages',
    headers: jsonHeaders,
    payload: `{"model":"claude-3-5-haiku-latest","max_tokens":8,"messages":[{"role":"user","content":"deep"}],"extra":${nested(30_000)}}`,
  });
  assert.equal(messages.statusCode, 400);
  assert.equal(json(messages).type, 'error');
  assert.equal(json(messages).error.type, 'invalid_request_error');
  for (const [url, payload] of [
    ['/v1/responses', `{"model":"gpt-4o-mini","input":"deep","extra":${nested(30_000)}}`],
    ['/v1/embeddings', `{"model":"text-embedding-3-small","input":${nested(30_000)}}`],
  ]) {
    const response = await app.inject({ method: 'POST', url, headers: jsonHeaders, payload });
    assert.equal(response.statusCode, 400, url);
    assert.equal(json(response).error.code, 'invalid_json', url);
  }
  assert.equal(await runsTotal(), before, 'no run is recorded for a refused body');

  const management = await app.inject({ method: 'POST', url: '/api/v1/keys', headers: jsonHeaders, payload: `{"name":"deep","scopes":${nested(200)}}` });
  assert.equal(management.statusCode, 400);
  assert.equal(json(management).error.code, 'invalid_json');
  assert.equal(json(await app.inject({ url: '/api/v1/keys' })).pagination.total, 0);
});

test('NUL characters: refused in management bodies and in any URL, kept in prompts', async (t) => {
  const { app } = await build(t, { env: { SVC_ALLOW_PUBLIC_SIGNUP: 'true' } });
  const setting = await app.inject({ method: 'PUT', url: '/api/v1/settings', payload: { key: 'retention_days', value: 30, note: 'a\u0000b' } });
  assert.equal(setting.statusCode, 400);
  assert.match(json(setting).error.message, /NUL character/);
  const key = await app.inject({ method: 'POST', url: '/api/v1/keys', payload: { ['na\u0000me']: 'x' } });
  assert.equal(key.statusCode, 400);
  assert.equal(json(await app.inject({ url: '/api/v1/keys' })).pagination.total, 0);
  for (const url of ['/api/v1/keys/key_abc%00junk', '/api/v1/runs?status=running%00', '/v1/models/gpt-4o-mini%00']) {
    const response = await app.inject({ url });
    assert.equal(response.statusCode, 400, url);
    assert.match(response.body, /NUL character \(%00\)/, url);
  }
  const prompt = await app.inject({ method: 'POST', url: '/v1/chat/completions', payload: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'a\u0000b' }] } });
  assert.equal(prompt.statusCode, 200);

  // The data file's driver cuts text at a NUL: this signed up as victim@example.com, whose owner then got 409.
  const password = 'a long enough password 12345';
  const hijack = await app.inject({ method: 'POST', url: '/api/v1/auth/signup', payload: { email: 'victim@example.com\u0000x', name: 'Mallory', password } });
  assert.equal(hijack.statusCode, 400);
  const victim = await app.inject({ method: 'POST', url: '/api/v1/auth/signup', payload: { email: 'victim@example.com', name: 'Victim', password } });
  assert.equal(victim.statusCode, 201);
  assert.equal(json(victim).user.email, 'victim@example.com');
});

test('a model named with control or invisible characters is a 400 on every wire, recorded nowhere', async (t) => {
  const { app } = await build(t);
  // A NUL, names that read exactly like gpt-4o-mini in every list (a zero-width space, a word joiner, a BOM, a
  // right-to-left mark), a reversed one, and the line and paragraph separators, which names svc shows elsewhere refuse.
  for (const model of ['gpt-4o-mini\u0000x', 'gpt\u200b-4o-mini', 'gpt-4o-mini\u2060', 'gpt-4o\ufeff-mini', 'gpt-4o\u200f-mini', 'gpt-4o-mini\u202e', 'gpt-4o\u2028mini', 'gpt\u2029-4o-mini']) {
    const cases: Array<[string, Record<string, unknown>]> = [
      ['/v1/chat/completions', { model, messages: [{ role: 'user', content: 'hi' }] }],
      ['/v1/messages', { model, max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] }],
      ['/v1/responses', { model, input: 'hi' }],
      ['/v1/embeddings', { model, input: 'hi' }],
      ['/api/v1/ingest/prompt', { source: 'sdk', prompt: 'hi', metadata: { model } }],
    ];
    for (const [url, payload] of cases) {
      const response = await app.inject({ method: 'POST', url, payload });
      assert.equal(response.statusCode, 400, `${url} ${JSON.stringify(model)}`);
      // The management API refuses a NUL anywhere in a body first (src/http/json-body.ts).
      const refusal = url.startsWith('/api/') && model.includes('\u0000') ? /NUL character/ : /model must not contain control characters, line separators, bidirectional overrides or invisible characters/;
      assert.match(response.body, refusal, url);
    }
  }
  assert.equal(json(await app.inject({ url: '/api/v1/runs' })).pagination.total, 0);
  // Other Unicode is a name like any: kept whole.
  const accented = await app.inject({ method: 'POST', url: '/v1/chat/completions', payload: { model: 'modèle-é', messages: [{ role: 'user', content: 'hi' }] } });
  assert.equal(accented.statusCode, 200);
});

test('a run recorded with a model name refused now (U+2028 inside it, before names were held to it) is still listed, found by its model and read', async (t) => {
  const { app, services } = await build(t);
  const model = 'gpt-4o\u2028mini';
  const run = services.ledger.start(runStart({ model }));
  run.finish(completedOutcome(model));
  const found = json(await app.inject({ url: `/api/v1/runs?model=${encodeURIComponent(model)}` }));
  assert.deepEqual(found.runs.map((listed: { id: string; model: string }) => [listed.id, listed.model]), [[run.id, model]]);
  const detail = await app.inject({ url: `/api/v1/runs/${run.id}` });
  assert.equal(detail.statusCode, 200);
  assert.equal(json(detail).run.model, model);
});

test('body limits: management bodies are bounded smaller than gateway bodies', async (t) => {
  const { app } = await build(t, { env: { SVC_API_BODY_LIMIT_BYTES: '2048', SVC_GATEWAY_BODY_LIMIT_BYTES: '65536' } });
  const big = 'x'.repeat(10_000);
  const management = await app.inject({ method: 'POST', url: '/api/v1/keys', payload: { name: big } });
  assert.equal(management.statusCode, 413);
  assert.equal(json(management).error.code, 'payload_too_large');
  const gateway = await app.inject({ method: 'POST', url: '/v1/chat/completions', payload: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: big }] } });
  assert.equal(gateway.statusCode, 200, 'a 10 KB prompt is within the gateway limit');
  const tooBig = await app.inject({ method: 'POST', url: '/v1/chat/completions', payload: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'x'.repeat(70_000) }] } });
  assert.equal(tooBig.statusCode, 413);
  assert.equal(json(tooBig).error.type, 'invalid_request_error');
});

test('rate limits: 429 with retry-after in the management, chat and messages shapes', async (t) => {
  const { app } = await build(t, { env: { SVC_RATE_LIMIT_API_PER_MINUTE: '3', SVC_RATE_LIMIT_GATEWAY_PER_MINUTE: '2' } });
  let last = await app.inject({ url: '/api/v1/keys' });
  for (let i = 0; i < 3; i++) last = await app.inject({ url: '/api/v1/keys' });
  assert.equal(last.statusCode, 429);
  assert.ok(Number(last.headers['retry-after']) >= 1);
  assert.equal(json(last).error.code, 'rate_limited');
  for (let i = 0; i < 2; i++) await app.inject({ url: '/v1/models' });
  const chat = await app.inject({ url: '/v1/models' });
  assert.equal(chat.statusCode, 429);
  assert.ok(Number(chat.headers['retry-after']) >= 1);
  assert.equal(json(chat).error.type, 'rate_limit_error');
  const messages = await app.inject({ method: 'POST', url: '/v1/messages', payload: {} });
  assert.equal(messages.statusCode, 429);
  assert.equal(json(messages).type, 'error');
  assert.equal(json(messages).error.type, 'rate_limit_error');
});

test('a rate limit of one request per minute is worded in the singular in the 429 message', async (t) => {
  const { app } = await build(t, { env: { SVC_RATE_LIMIT_API_PER_MINUTE: '1' } });
  await app.inject({ url: '/api/v1/keys' });
  const limited = await app.inject({ url: '/api/v1/keys' });
  assert.equal(limited.statusCode, 429);
  assert.match(json(limited).error.message, /^Rate limit exceeded: at most 1 request per minute\. Retry after /);
});

test('the wall clock stepping back an hour (NTP, a VM resumed) does not hold a caller at its rate limit for that hour', async (t) => {
  const { app } = await build(t, { env: { SVC_RATE_LIMIT_API_PER_MINUTE: '2', SVC_RATE_LIMIT_GATEWAY_PER_MINUTE: '2' } });
  for (let i = 0; i < 2; i++) {
    assert.equal((await app.inject({ url: '/api/v1/keys' })).statusCode, 200);
    assert.equal((await app.inject({ url: '/v1/models' })).statusCode, 200);
  }
  const wallNow = Date.now;
  t.mock.method(Date, 'now', () => wallNow() - 3_600_000);
  for (const url of ['/api/v1/keys', '/v1/models']) {
    const limited = await app.inject({ url });
    assert.equal(limited.statusCode, 429, url);
    // The window is a minute of elapsed time, whatever the wall clock says: at most 60 s to wait, not 61 minutes.
    assert.ok(Number(limited.headers['retry-after']) <= 60, `${url}: retry-after ${limited.headers['retry-after']}`);
    assert.ok(Number(limited.headers['x-ratelimit-reset']) <= 60, `${url}: x-ratelimit-reset ${limited.headers['x-ratelimit-reset']}`);
  }
});

test('a caller at its rate limit stays limited while a thousand others are seen within its window (the 5,000 most recent callers are kept, as @fastify/rate-limit kept them)', async (t) => {
  const { app } = await build(t, { env: { SVC_RATE_LIMIT_API_PER_MINUTE: '2' } });
  const from = (remoteAddress: string) => app.inject({ url: '/api/v1/keys', remoteAddress });
  for (let i = 0; i < 2; i++) assert.equal((await from('10.0.0.1')).statusCode, 200);
  assert.equal((await from('10.0.0.1')).statusCode, 429);
  // 1,500 other callers, one request each: a store keeping 1,000 forgot the first one's window and let it start anew.
  for (let i = 0; i < 1_500; i++) assert.equal((await from(`10.1.${i >> 8}.${i & 255}`)).statusCode, 200);
  assert.equal((await from('10.0.0.1')).statusCode, 429);
});

test('unknown routes are JSON 404s in each surface shape', async (t) => {
  const { app } = await build(t);
  const management = await app.inject({ url: '/api/v1/nope' });
  assert.equal(management.statusCode, 404);
  assert.equal(json(management).error.code, 'route_not_found');
  const chat = await app.inject({ url: '/v1/nope' });
  assert.equal(chat.statusCode, 404);
  assert.equal(typeof json(chat).error.message, 'string');
  const root = await app.inject({ url: '/definitely-not-here' });
  assert.equal(root.statusCode, 404);
  assert.ok(json(root).error);
});

test('health is public and complete; readiness is admin-only and computed from configuration', async (t) => {
  const { app } = await build(t, { env: { SVC_API_KEY: 'bootstrap-token-health-000000001' } });
  const health = await app.inject({ url: '/health' });
  assert.equal(health.statusCode, 200);
  assert.equal(typeof json(health).version, 'string');
  assert.equal((await app.inject({ url: '/api/v1/readiness' })).statusCode, 401);
  const readiness = json(await app.inject({ url: '/api/v1/readiness', headers: { authorization: 'Bearer bootstrap-token-health-000000001' } }));
  const body = JSON.stringify(readiness);
  for (const item of ['auth', 'vault', 'provider']) assert.ok(body.includes(item), item);
  assert.ok(!body.includes('bootstrap-token-health'));
});

test('audit: a per-tenant hash chain that verify=true checks and that tampering breaks', async (t) => {
  const { app, services } = await build(t);
  for (const name of ['a', 'b', 'c']) await app.inject({ method: 'POST', url: '/api/v1/keys', payload: { name } });
  const verified = json(await app.inject({ url: '/api/v1/audit?verify=true&limit=2' }));
  assert.equal(verified.events.length, 2);
  assert.equal(verified.integrity.ok, true);
  assert.equal(verified.events[0].prevHash, verified.events[1].hash);
  assert.equal(json(await app.inject({ url: '/api/v1/audit?decision=deny' })).events.length, 0);
  assert.equal((await app.inject({ url: '/api/v1/audit?limit=0' })).statusCode, 400);
  await services.store.write((sql) => sql.run("UPDATE audit_events SET target = 'forged' WHERE seq = 2"));
  const broken = json(await app.inject({ url: '/api/v1/audit?verify=true' }));
  assert.equal(broken.integrity.ok, false);
  assert.equal(broken.integrity.brokenAt, 2);
  assert.equal(broken.integrity.count, 2, 'the events read up to the break');

  // What docs/api.md says verify=true does not catch: the edit rechained (the hash is not keyed), the newest event cut.
  const rows = await services.store.read((sql) => sql.all<Record<string, any>>("SELECT * FROM audit_events WHERE tenant_id = 'default' ORDER BY seq"));
  let prev = sha256Hex('audit:default');
  await services.store.write((sql) => {
    for (const row of rows) {
      const hashed = { id: row.id, tenantId: row.tenant_id, seq: row.seq, action: row.action, decision: row.decision, actor: JSON.parse(row.actor_json), target: row.target, details: JSON.parse(row.details_json), createdAt: row.created_at };
      const hash = chainHash(prev, hashed);
      sql.run('UPDATE audit_events SET prev_hash = ?, hash = ? WHERE id = ?', [prev, hash, row.id]);
      prev = hash;
    }
  });
  assert.deepEqual(json(await app.inject({ url: '/api/v1/audit?verify=true' })).integrity, { ok: true, count: 3, brokenAt: null }, 'rechained');
  await services.store.write((sql) => sql.run("DELETE FROM audit_events WHERE tenant_id = 'default' AND seq = 3"));
  assert.deepEqual(json(await app.inject({ url: '/api/v1/audit?verify=true' })).integrity, { ok: true, count: 2, brokenAt: null }, 'cut at the newest end');
});

test('router-level errors use the surface envelope: an over-long path parameter (414) and a malformed URL (400)', async (t) => {
  const { app } = await build(t);
  const long = await app.inject({ url: `/api/v1/runs/${'a'.repeat(5000)}` });
  assert.equal(long.statusCode, 414);
  assert.deepEqual(JSON.parse(long.body), { error: { code: 'uri_too_long', message: 'A path segment of the URL is too long.' } });
  assert.ok(long.headers['x-request-id']);
  const bad = await app.inject({ url: '/api/v1/runs/%E0%A4%A' });
  assert.equal(bad.statusCode, 400);
  assert.equal(JSON.parse(bad.body).error.code, 'invalid_request');
  const chat = await app.inject({ url: `/v1/models/${'m'.repeat(5000)}` });
  assert.equal(chat.statusCode, 414);
  assert.equal(JSON.parse(chat.body).error.code, 'uri_too_long');
  assert.equal(JSON.parse(chat.body).error.type, 'invalid_request_error');
});
