/**
 * DNS rebinding (docs/api.md "Open identities and DNS rebinding"): an identity svc grants without a credential (open
 * dev mode, the open gateway) is granted to any page a browser runs, once that page's name resolves to svc. The
 * page's requests are then same-origin to the browser, carry the page's own name as Host, and read the answers: a
 * page visited on the machine of a developer running svc on 127.0.0.1 could mint a lasting admin key, read every
 * recorded prompt and spend the provider keys. Such a page needs a name of the public DNS (a dotted name that is not
 * `localhost`), which no one sends to reach svc itself, so those are refused unless svc was configured with it; IP
 * literals, `localhost` names and single-label names (a compose service's `svc`) are answered as before.
 */
import { isIP } from 'node:net';
import type { FastifyRequest } from 'fastify';
import { AppError } from '../core/errors.ts';
import { withoutTrailing } from '../core/text.ts';
import { bareIp } from '../net/addresses.ts';

/**
 * Whether a request addressed to `hostname` (the Host header's, without its port) may be answered with an identity
 * granted without a credential; `configured` are the host names svc was configured with (lowercased).
 */
export function mayServeOpenIdentity(hostname: string, configured: readonly string[]): boolean {
  // Without a Host (HTTP/1.0) no browser sent it.
  if (hostname === '') return true;
  const name = withoutTrailing(bareIp(hostname).toLowerCase(), '.');
  if (isIP(name) !== 0 || !name.includes('.') || name.endsWith('.localhost')) return true;
  return configured.includes(name);
}

/** The host name of a `Host` value, read as fastify reads it: without the port, an IPv6 literal with its brackets. */
function hostnameOfHost(host: string): string {
  return host[0] === '[' ? host.slice(0, host.indexOf(']') + 1) : host.split(':', 1)[0]!;
}

/**
 * `mayServeOpenIdentity` for a request: the name it is addressed to (`X-Forwarded-Host` from a trusted proxy, else
 * `Host`), and the `Host` its client sent as well. A browser on the machine reaches svc from a trusted address
 * (127.0.0.1, or a container network's gateway through a published port), and a rebound page, same-origin, may set
 * `X-Forwarded-Host: localhost`; the `Host` a browser sends is the page's own name, which no page can change.
 */
export function mayServeOpenIdentityAt(request: FastifyRequest, configured: readonly string[]): boolean {
  if (!mayServeOpenIdentity(request.hostname, configured)) return false;
  const host = request.headers.host;
  return request.headers['x-forwarded-host'] === undefined || host === undefined || mayServeOpenIdentity(hostnameOfHost(host), configured);
}

export function openIdentityRefused(): AppError {
  return new AppError('forbidden', {
    message:
      'Without a credential svc answers only requests addressed to localhost, a name ending in .localhost, an IP address, a single-label name (such as a compose service) or the host of SVC_APP_BASE_URL or SVC_HOST (DNS rebinding); present an API key.',
  });
}
