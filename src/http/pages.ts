/**
 * The account pages the e-mails link to (`/login`, `/accept-invite`, `/reset-password`, `/verify-email`), the home page
 * a browser gets at `/`, and their script and style assets under `/assets/pages/`. Static files from `dashboard/pages/` that talk to `/api/v1` from the
 * browser; public, outside the API surfaces (no identity hook, no rate limiter: they are a handful of bytes from memory).
 *
 * The files are a fixed list read once at start-up and served from memory: a URL never becomes a file-system path, so
 * there is nothing to traverse. (@fastify/static was weighed: its current releases depend on content-disposition 3,
 * which requires Node 22, and the line had five path-traversal advisories in 2026; for seven known files a list is
 * the smaller thing to trust.)
 *
 * Every response carries a strict Content-Security-Policy (scripts, styles and fetches from svc only, nothing inline)
 * and `Referrer-Policy: no-referrer` (the token pages' URLs hold secrets until their script removes them), and, as every
 * answer of svc does, `nosniff` (src/http/nosniff.ts); pages are `no-store`, assets `no-cache` with an ETag.
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

/** The pages: URL path -> file in the pages directory. The last three open from e-mailed links with a token. */
export const PAGES: Readonly<Record<string, string>> = {
  '/login': 'login.html',
  '/accept-invite': 'accept-invite.html',
  '/reset-password': 'reset-password.html',
  '/verify-email': 'verify-email.html',
};

/**
 * The page at `/` for a browser until the dashboard lands there (dashboard/README.md): who is signed in, where, and
 * the base URLs SDKs take, so that the pages' "Go to svc" and an address typed in a browser do not end on a JSON 404.
 * API clients keep that 404 (`homeRoute`).
 */
export const HOME_PAGE = 'home.html';

/** Where the pages' scripts and style live; `/assets/` itself is left to the dashboard. */
export const ASSET_PREFIX = '/assets/pages/';

const JS = 'text/javascript; charset=utf-8';

/** The assets: file name -> content type. Anything else under the prefix is the app's ordinary 404. */
export const ASSETS: Readonly<Record<string, string>> = {
  'style.css': 'text/css; charset=utf-8',
  'common.js': JS,
  'login.js': JS,
  'accept-invite.js': JS,
  'reset-password.js': JS,
  'verify-email.js': JS,
  'home.js': JS,
};

export const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "connect-src 'self'",
  "img-src 'self' data:",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join('; ');

const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy': CONTENT_SECURITY_POLICY,
  'referrer-policy': 'no-referrer',
  // For browsers that predate `frame-ancestors`.
  'x-frame-options': 'DENY',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
};

export interface PagesOptions {
  /** The directory holding the files; found next to the bundle or in the source tree when omitted. */
  dir?: string;
}

/**
 * The pages directory: `dist/pages/` beside the bundle (`bin/build.mjs` copies it there), or `dashboard/pages/`
 * when running from source (this file is `src/http/pages.ts`).
 */
export function findPagesDir(): string {
  const candidates = [fileURLToPath(new URL('./pages/', import.meta.url)), fileURLToPath(new URL('../../dashboard/pages/', import.meta.url))];
  const found = candidates.find((dir) => existsSync(join(dir, 'login.html')));
  if (!found) throw new Error(`svc: the account pages are missing (looked in ${candidates.join(' and ')}); rebuild with npm run build`);
  return found;
}

interface Served {
  body: Buffer;
  headers: Record<string, string>;
  etag?: string;
}

export function pagesRoutes(options: PagesOptions = {}) {
  return async function pages(app: FastifyInstance): Promise<void> {
    const dir = options.dir ?? findPagesDir();
    // Read synchronously: ten small files at start-up, where each asynchronous read would cost several trips through
    // the thread pool while nothing else can run yet anyway.
    const load = (name: string) => readFileSync(join(dir, name));

    for (const [path, file] of Object.entries(PAGES)) {
      const served: Served = {
        body: load(file),
        headers: { ...SECURITY_HEADERS, 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' },
      };
      app.get(path, (request, reply) => send(request, reply, served));
    }
    const home: Served = {
      body: load(HOME_PAGE),
      // The same URL answers JSON to API clients: a cache must keep the two apart.
      headers: { ...SECURITY_HEADERS, 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store', vary: 'Accept' },
    };
    app.get('/', (request, reply) => {
      if (prefersHtml(request.headers.accept)) return send(request, reply, home);
      // Exactly the answer of any unknown route (the app's not-found handler), plus the Vary the page needs.
      reply.header('vary', 'Accept');
      return reply.callNotFound();
    });
    for (const [file, type] of Object.entries(ASSETS)) {
      const body = load(file);
      const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`;
      const served: Served = { body, etag, headers: { ...SECURITY_HEADERS, 'content-type': type, 'cache-control': 'no-cache', etag } };
      app.get(ASSET_PREFIX + file, (request, reply) => send(request, reply, served));
    }
  };
}

// Whether an Accept header asks for HTML first: `text/html` named with a quality above zero and at least that of JSON
// (`application/json`, `application/*` or `*/*`). Browsers navigating send `text/html,...,*/*;q=0.8`; SDKs send
// `application/json`, curl `*/*`, many clients nothing: those get JSON (a line comment: `*/` would end a block one).
export function prefersHtml(accept: string | undefined): boolean {
  if (accept === undefined) return false;
  let html = 0;
  let json = 0;
  for (const range of accept.split(',')) {
    const [type = '', ...parameters] = range.split(';');
    const quality = qualityOf(parameters);
    const name = type.trim().toLowerCase();
    if (name === 'text/html') html = Math.max(html, quality);
    else if (name === 'application/json' || name === 'application/*' || name === '*/*') json = Math.max(json, quality);
  }
  return html > 0 && html >= json;
}

/** The `q` of a media range's parameters (RFC 9110 section 12.4.2); 1 when absent, 0 when unreadable. */
function qualityOf(parameters: string[]): number {
  for (const parameter of parameters) {
    const [key, value] = parameter.split('=');
    if (key?.trim().toLowerCase() !== 'q') continue;
    const quality = Number(value?.trim());
    return Number.isFinite(quality) && quality >= 0 && quality <= 1 ? quality : 0;
  }
  return 1;
}

function send(request: FastifyRequest, reply: FastifyReply, served: Served): FastifyReply {
  reply.headers(served.headers);
  const match = request.headers['if-none-match'];
  if (served.etag && typeof match === 'string' && match.split(',').some((tag) => tag.trim().replace(/^W\//, '') === served.etag)) {
    return reply.status(304).send();
  }
  return reply.send(served.body);
}
