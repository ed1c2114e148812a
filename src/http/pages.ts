/**
 * The account pages the e-mails link to (`/login`, `/accept-invite`, `/reset-password`, `/verify-email`) and their
 * script and style assets under `/assets/pages/`. Static files from `dashboard/pages/` that talk to `/api/v1` from the
 * browser; public, outside the API surfaces (no identity hook, no rate limiter: they are a handful of bytes from memory).
 *
 * The files are a fixed list read once at start-up and served from memory: a URL never becomes a file-system path, so
 * there is nothing to traverse. (@fastify/static was weighed: its current releases depend on content-disposition 3,
 * which requires Node 22, and the line had five path-traversal advisories in 2026; for seven known files a list is
 * the smaller thing to trust.)
 *
 * Every response carries a strict Content-Security-Policy (scripts, styles and fetches from svc only, nothing inline),
 * `nosniff` and `Referrer-Policy: no-referrer` (the token pages' URLs hold secrets until their script removes them);
 * pages are `no-store`, assets `no-cache` with an ETag.
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
  'x-content-type-options': 'nosniff',
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
    for (const [file, type] of Object.entries(ASSETS)) {
      const body = load(file);
      const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`;
      const served: Served = { body, etag, headers: { ...SECURITY_HEADERS, 'content-type': type, 'cache-control': 'no-cache', etag } };
      app.get(ASSET_PREFIX + file, (request, reply) => send(request, reply, served));
    }
  };
}

function send(request: FastifyRequest, reply: FastifyReply, served: Served): FastifyReply {
  reply.headers(served.headers);
  const match = request.headers['if-none-match'];
  if (served.etag && typeof match === 'string' && match.split(',').some((tag) => tag.trim().replace(/^W\//, '') === served.etag)) {
    return reply.status(304).send();
  }
  return reply.send(served.body);
}
