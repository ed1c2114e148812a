/**
 * The account pages (src/http/pages.ts): every page and asset with its content type and security headers, public in
 * every auth mode, nothing inline that a strict CSP would block, and no way to reach another file by its path.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'node:test';
import { ASSET_PREFIX, ASSETS, CONTENT_SECURITY_POLICY, HOME_PAGE, PAGES } from '../../src/http/pages.ts';
import { build } from '../support/build.ts';
import { ROOT } from '../support/process.ts';

const TOKEN_PAGES = ['/accept-invite', '/reset-password', '/verify-email'];
const PAGES_DIR = join(ROOT, 'dashboard', 'pages');
/** What Chromium sends when it navigates to a page. */
const BROWSER_ACCEPT = 'text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/apng,*/*;q=0.8';

function assertSecurityHeaders(headers: Record<string, unknown>, where: string): void {
  assert.equal(headers['content-security-policy'], CONTENT_SECURITY_POLICY, where);
  assert.equal(headers['x-content-type-options'], 'nosniff', where);
  assert.equal(headers['referrer-policy'], 'no-referrer', where);
  assert.equal(headers['x-frame-options'], 'DENY', where);
}

test('the policy allows only svc itself and nothing inline', () => {
  assert.match(CONTENT_SECURITY_POLICY, /default-src 'none'/);
  assert.match(CONTENT_SECURITY_POLICY, /script-src 'self'(;|$)/);
  assert.match(CONTENT_SECURITY_POLICY, /frame-ancestors 'none'/);
  assert.doesNotMatch(CONTENT_SECURITY_POLICY, /unsafe-|\*/);
});

test('every page is 200 text/html with the security headers, not stored, also with a query and a trailing slash', async (t) => {
  const { app } = await build(t);
  for (const path of Object.keys(PAGES)) {
    for (const url of [path, `${path}/`, `${path}?token=abc&next=%2F`]) {
      const response = await app.inject({ method: 'GET', url });
      assert.equal(response.statusCode, 200, url);
      assert.equal(response.headers['content-type'], 'text/html; charset=utf-8', url);
      assertSecurityHeaders(response.headers, url);
      assert.equal(response.headers['cache-control'], 'no-store', url);
      assert.match(response.body, /^<!doctype html>/, url);
    }
    const head = await app.inject({ method: 'HEAD', url: path });
    assert.equal(head.statusCode, 200);
    assert.equal(head.body, '');
  }
});

test('the token pages carry Referrer-Policy: no-referrer and Cache-Control: no-store', async (t) => {
  const { app } = await build(t);
  for (const path of TOKEN_PAGES) {
    const response = await app.inject({ method: 'GET', url: `${path}?token=${'a'.repeat(43)}` });
    assert.equal(response.statusCode, 200, path);
    assert.equal(response.headers['referrer-policy'], 'no-referrer', path);
    assert.equal(response.headers['cache-control'], 'no-store', path);
    // Belt and braces for a copy saved to disk or served by something else.
    assert.match(response.body, /<meta name="referrer" content="no-referrer">/, path);
  }
});

test('the pages are public when svc is protected (no credential needed, no 401)', async (t) => {
  const { app } = await build(t, { env: { SVC_API_KEY: 'svc_bootstrap_pages_test_token' } });
  for (const path of Object.keys(PAGES)) {
    assert.equal((await app.inject({ method: 'GET', url: path })).statusCode, 200, path);
  }
  assert.equal((await app.inject({ method: 'GET', url: `${ASSET_PREFIX}common.js` })).statusCode, 200);
});

test('the /login page links to /reset-password', async (t) => {
  const { app } = await build(t);
  const response = await app.inject({ method: 'GET', url: '/login' });
  assert.match(response.body, /<a href="\/reset-password">Forgot your password\?<\/a>/);
});

test('assets are served with their content types, nosniff, and revalidated by ETag', async (t) => {
  const { app } = await build(t);
  for (const [file, type] of Object.entries(ASSETS)) {
    const url = ASSET_PREFIX + file;
    const response = await app.inject({ method: 'GET', url });
    assert.equal(response.statusCode, 200, url);
    assert.equal(response.headers['content-type'], type, url);
    assertSecurityHeaders(response.headers, url);
    assert.equal(response.headers['cache-control'], 'no-cache', url);
    assert.equal(response.body, readFileSync(join(PAGES_DIR, file), 'utf8'), url);
    const etag = response.headers.etag;
    assert.equal(typeof etag, 'string');
    const again = await app.inject({ method: 'GET', url, headers: { 'if-none-match': `W/"other", ${etag}` } });
    assert.equal(again.statusCode, 304, url);
    assert.equal(again.body, '');
  }
  assert.equal((await app.inject({ method: 'GET', url: `${ASSET_PREFIX}common.js`, headers: { 'if-none-match': '"stale"' } })).statusCode, 200);
  assert.equal(ASSETS['common.js'], 'text/javascript; charset=utf-8');
  assert.equal(ASSETS['style.css'], 'text/css; charset=utf-8');
});

test('the served list and dashboard/pages/ hold the same files', () => {
  const listed = [HOME_PAGE, ...Object.values(PAGES), ...Object.keys(ASSETS)].sort();
  assert.deepEqual(readdirSync(PAGES_DIR).sort(), listed);
});

test('the pages have no inline script, inline style or inline event handler, and load only listed assets', async (t) => {
  const { app } = await build(t);
  for (const path of ['/', ...Object.keys(PAGES)]) {
    const html = (await app.inject({ method: 'GET', url: path, headers: { accept: BROWSER_ACCEPT } })).body;
    for (const script of html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/g)) {
      assert.match(script[1]!, /\bsrc="[^"]+"/, `${path}: every script has a src`);
      assert.equal(script[2]!.trim(), '', `${path}: no inline script body`);
    }
    assert.doesNotMatch(html, /<style\b/i, `${path}: no <style>`);
    assert.doesNotMatch(html, /\sstyle=/i, `${path}: no style attribute`);
    assert.doesNotMatch(html, /\son[a-z]+=/i, `${path}: no inline event handler`);
    assert.doesNotMatch(html, /javascript:/i, path);
    const references = [...html.matchAll(/\b(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);
    for (const reference of references.filter((r) => r.startsWith('/assets/'))) {
      assert.ok(reference.startsWith(ASSET_PREFIX) && reference.slice(ASSET_PREFIX.length) in ASSETS, `${path}: ${reference}`);
    }
    assert.ok(!references.some((r) => /^(https?:)?\/\//.test(r)), `${path}: no external resource`);
    // Every input has a label tied to it (but the hidden ones that name the account for password managers), and the
    // page has an alert region for errors.
    for (const input of html.matchAll(/<input\b[^>]*\bid="([^"]+)"[^>]*>/g)) {
      if (/\shidden\b/.test(input[0]) && /autocomplete="username"/.test(input[0])) continue;
      assert.match(html, new RegExp(`<label for="${input[1]}">`), `${path}: label for #${input[1]}`);
    }
    assert.match(html, /role="alert"/, path);
  }
  // The scripts never write HTML from strings (every text the API sends is set as text).
  for (const file of Object.keys(ASSETS).filter((f) => f.endsWith('.js'))) {
    assert.doesNotMatch(readFileSync(join(PAGES_DIR, file), 'utf8'), /innerHTML|outerHTML|insertAdjacentHTML|document\.write|eval\(/, file);
  }
});

test('an unknown asset is 404', async (t) => {
  const { app } = await build(t);
  for (const url of [`${ASSET_PREFIX}nope.js`, `${ASSET_PREFIX}`, '/assets/', '/assets/style.css', `${ASSET_PREFIX}login.html`]) {
    const response = await app.inject({ method: 'GET', url });
    assert.equal(response.statusCode, 404, url);
    assert.equal(response.json().error.code, 'route_not_found', url);
  }
});

test('no path, plain or encoded, reaches a file outside the list', async (t) => {
  const { app } = await build(t);
  const secret = readFileSync(join(ROOT, 'package.json'), 'utf8');
  const probes = [
    '/assets/../package.json',
    `${ASSET_PREFIX}../../package.json`,
    `${ASSET_PREFIX}..%2f..%2fpackage.json`,
    `${ASSET_PREFIX}%2e%2e/%2e%2e/package.json`,
    `${ASSET_PREFIX}%2E%2E%2F%2E%2E%2Fpackage.json`,
    `${ASSET_PREFIX}%252e%252e%252fpackage.json`,
    `${ASSET_PREFIX}..%5c..%5cpackage.json`,
    `${ASSET_PREFIX}....//....//package.json`,
    `${ASSET_PREFIX}./common.js/../../../package.json`,
    `${ASSET_PREFIX}style.css%00.js`,
    '/login/../package.json',
    '/login/..%2f..%2fpackage.json',
    '/%2e%2e/package.json',
    '/assets/pages/%2e%2e/%2e%2e/src/http/pages.ts',
    '/assets/pages/..%2f..%2f..%2fetc%2fpasswd',
  ];
  for (const url of probes) {
    const response = await app.inject({ method: 'GET', url });
    assert.ok(response.statusCode === 404 || response.statusCode === 400, `${url}: ${response.statusCode}`);
    assert.ok(!response.body.includes('"devDependencies"') && !response.body.includes(secret.slice(0, 40)), url);
    assert.ok(!response.body.includes('root:'), url);
    assert.ok(!response.body.includes('pagesRoutes'), url);
  }
});

test('GET / for a browser is the home page, with the pages\' headers, not stored, and Vary: Accept', async (t) => {
  const { app } = await build(t, { env: { SVC_API_KEY: 'svc_bootstrap_pages_test_token' } });
  for (const accept of [BROWSER_ACCEPT, 'text/html', 'application/json;q=0.5, text/html']) {
    for (const url of ['/', '/?from=invite']) {
      const response = await app.inject({ method: 'GET', url, headers: { accept } });
      assert.equal(response.statusCode, 200, `${url} ${accept}`);
      assert.equal(response.headers['content-type'], 'text/html; charset=utf-8');
      assertSecurityHeaders(response.headers, url);
      assert.equal(response.headers['cache-control'], 'no-store');
      assert.equal(response.headers.vary, 'Accept');
      assert.match(response.body, /^<!doctype html>/);
      assert.match(response.body, /<script type="module" src="\/assets\/pages\/home\.js"><\/script>/);
    }
  }
  const head = await app.inject({ method: 'HEAD', url: '/', headers: { accept: BROWSER_ACCEPT } });
  assert.equal(head.statusCode, 200);
  assert.equal(head.body, '');
});

test('GET / for an API client, and any other method on /, is the JSON 404 of every unknown route', async (t) => {
  const { app } = await build(t);
  const expected = { error: { code: 'route_not_found', message: 'No route for GET /.' } };
  for (const accept of [undefined, '*/*', 'application/json', 'text/*', 'text/html;q=0', 'application/json, text/html;q=0.9']) {
    const response = await app.inject({ method: 'GET', url: '/', headers: accept === undefined ? {} : { accept } });
    assert.equal(response.statusCode, 404, String(accept));
    assert.match(String(response.headers['content-type']), /^application\/json/, String(accept));
    assert.deepEqual(response.json(), expected, String(accept));
    // A cache between a browser and svc must not give the browser this answer for the page, nor the reverse.
    assert.equal(response.headers.vary, 'Accept', String(accept));
    assert.equal(response.headers['content-security-policy'], undefined, 'the page headers are the page\'s only');
  }
  for (const method of ['POST', 'PUT', 'DELETE', 'PATCH'] as const) {
    const response = await app.inject({ method, url: '/', headers: { accept: BROWSER_ACCEPT } });
    assert.equal(response.statusCode, 404, method);
    assert.deepEqual(response.json(), { error: { code: 'route_not_found', message: `No route for ${method} /.` } }, method);
  }
  // Other unknown paths are untouched: a browser gets the JSON 404 there too.
  const other = await app.inject({ method: 'GET', url: '/nope', headers: { accept: BROWSER_ACCEPT } });
  assert.equal(other.statusCode, 404);
  assert.equal(other.json().error.code, 'route_not_found');
});
