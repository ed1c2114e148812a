/**
 * The `svc_session` cookie (docs/accounts.md): HttpOnly, SameSite=Lax, Path=/, Max-Age of the longest session
 * lifetime, Secure when the browser reached svc over HTTPS (`overHttps`).
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { originOf, presentedOrigin } from './request-origin.ts';
import { requestScheme } from './request-scheme.ts';

export const SESSION_COOKIE = 'svc_session';
const MAX_AGE_S = 30 * 86_400;

/**
 * Whether the browser that gets the cookie is on HTTPS: the request came so (directly, or through a trusted proxy's
 * X-Forwarded-Proto, SPEC 5.4), or the page it came from is on an https origin. Behind a TLS proxy svc does not trust,
 * the request arrives as http from a page on https://SVC_APP_BASE_URL, and a cookie without Secure would go out in
 * clear text with any http:// request a network attacker makes that browser send to the same host. Every route that
 * sets the cookie passes the CSRF check (src/http/surface.ts), so the origin read here is svc's own or
 * SVC_APP_BASE_URL's; logout, which clears it, may name any (a clearing cookie made Secure costs nothing).
 */
function overHttps(request: FastifyRequest): boolean {
  if (requestScheme(request) === 'https') return true;
  const presented = presentedOrigin(request);
  return presented !== undefined && originOf(presented).startsWith('https://');
}

function attributes(request: FastifyRequest, maxAge: number): string {
  return `Path=/; HttpOnly; SameSite=Lax; Max-Age=${maxAge}${overHttps(request) ? '; Secure' : ''}`;
}

export function setSessionCookie(request: FastifyRequest, reply: FastifyReply, token: string): void {
  reply.header('set-cookie', `${SESSION_COOKIE}=${token}; ${attributes(request, MAX_AGE_S)}`);
  reply.header('cache-control', 'no-store');
}

export function clearSessionCookie(request: FastifyRequest, reply: FastifyReply): void {
  reply.header('set-cookie', `${SESSION_COOKIE}=; ${attributes(request, 0)}`);
}

/** The raw values of every cookie of the request with this name, in the order sent. */
function rawValuesOf(request: FastifyRequest, name: string): string[] {
  const raw = request.headers.cookie;
  if (!raw) return [];
  const values: string[] = [];
  for (const part of raw.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) values.push(part.slice(eq + 1).trim());
  }
  return values;
}

function decoded(value: string): string | undefined {
  try {
    return decodeURIComponent(value);
  } catch {
    return undefined; // malformed percent-encoding: no usable cookie
  }
}

/**
 * The value of one cookie of the request, if it is present once. A name present twice is none: svc sets its cookie
 * for its own host and path `/` only, so a second one comes from elsewhere, such as a sibling subdomain setting it for
 * the parent domain with a longer path, which browsers send first (cookie tossing: the victim would act in the
 * attacker's session).
 */
export function cookieOf(request: FastifyRequest, name: string): string | undefined {
  const values = rawValuesOf(request, name);
  return values.length === 1 ? decoded(values[0]!) : undefined;
}

/**
 * Every value of a cookie the request carries, however many times: for logout, which ends whatever sessions they
 * name (a request carrying `svc_session` twice is authenticated by neither, but its sender holds both).
 */
export function cookieValuesOf(request: FastifyRequest, name: string): string[] {
  return rawValuesOf(request, name).flatMap((value) => decoded(value) ?? []);
}
