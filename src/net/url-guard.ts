/**
 * Outbound URL guard: the one gate every user-influenced outbound request (web fetch, webhooks, HTTP MCP
 * servers) passes through, so that a URL supplied by a tenant can never make the gateway reach its own
 * loopback, the private network it runs in, or a cloud metadata endpoint (SSRF). It accepts only http(s)
 * URLs without credentials, refuses internal-looking names before DNS, resolves every A/AAAA record and
 * refuses the target if ANY of them is non-public (an attacker controls which record a client picks), and
 * repeats the same check inside the connection's own DNS lookup so a record that changes between check and
 * connect (DNS rebinding) is caught too. `guardedFetch` adds the redirect, time and size bounds on top.
 */
import { promises as dns } from 'node:dns';
import { BlockList, isIP, type LookupFunction } from 'node:net';
import { Agent, buildConnector, request } from 'undici';
import { AppError, isAppError } from '../core/errors.ts';
import { withoutTrailing } from '../core/text.ts';
import { ambiguousEmbeddedIPv4s, bareIp, embeddedIPv4 } from './addresses.ts';

/** A resolver returning every address of a host; injectable so tests need no DNS. */
export type OutboundLookup = (hostname: string) => Promise<Array<{ address: string; family: number }>>;

export interface UrlGuardOptions {
  /**
   * Open dev mode only (web fetch, never webhooks): allow private and loopback targets. Schemes are still
   * limited to http(s) and cloud metadata addresses (link-local and the few fixed ones in METADATA) stay refused.
   */
  allowPrivate?: boolean;
  lookup?: OutboundLookup;
  /** How long a host name lookup may take before the check gives up on it; default LOOKUP_TIMEOUT_MS. */
  lookupTimeoutMs?: number;
  /**
   * The organization the check is for, whose share of the lookup slots it counts against (MAX_LOOKUPS_PER_TENANT);
   * checks without one share a single share.
   */
  tenantId?: string;
}

const defaultLookup: OutboundLookup = (hostname) => dns.lookup(hostname, { all: true, verbatim: true });

/**
 * dns.lookup runs getaddrinfo on libuv's thread pool (UV_THREADPOOL_SIZE threads, 4 by default), which svc's own
 * connections to upstreams and password hashing (scrypt) queue on too. A name whose DNS never answers holds its
 * thread until the system resolver gives up (its own timeouts and attempts: tens of seconds), and giving up on the
 * lookup here does not free it. So a check waits LOOKUP_TIMEOUT_MS at most, and the guard's lookups, the abandoned
 * ones included until they end, hold at most half of the pool: past that a check is refused, retryably, before it
 * looks anything up, and a tenant saving URLs on a dead DNS server cannot take the pool from everyone else. Nor
 * every one of those slots from the other tenants: one tenant's lookups hold half of them at most (at least one, so
 * with a single slot, UV_THREADPOOL_SIZE of 2 or 3, there is nothing to share).
 */
const LOOKUP_TIMEOUT_MS = 5_000;

/**
 * The size of libuv's thread pool for a value of UV_THREADPOOL_SIZE, read as libuv reads it (its threadpool.c: `atoi`
 * into an unsigned count): unset 4; leading digits (`8abc` is 8, ` 8` is 8); 0, empty or no number 1; above 1024, or
 * negative (a huge unsigned), 1024. Read with `Number(value) || 4`, a pool of 1 (`0`, empty, `abc`) was counted as 4,
 * so the lookups could take its one thread, and `2000` as 2000, letting them take 1,000 of its 1,024 threads.
 */
export function threadPoolSize(value: string | undefined): number {
  if (value === undefined) return 4;
  const count = Number.parseInt(value, 10);
  if (Number.isNaN(count) || count === 0) return 1;
  return count < 0 || count > 1024 ? 1024 : count;
}

const MAX_LOOKUPS_IN_FLIGHT = Math.max(1, Math.floor(threadPoolSize(process.env.UV_THREADPOOL_SIZE) / 2));
const MAX_LOOKUPS_PER_TENANT = Math.max(1, Math.floor(MAX_LOOKUPS_IN_FLIGHT / 2));
let lookupsInFlight = 0;
/** Lookups in flight by tenant ('' for checks without one); a tenant with none has no entry. */
const tenantLookupsInFlight = new Map<string, number>();
/** The retry-after of a refusal: about when an abandoned lookup's thread may be free again. */
const RETRY_AFTER_SECONDS = String(Math.ceil(LOOKUP_TIMEOUT_MS / 1000));

function blockList(v4: string[], v6: string[]): BlockList {
  const list = new BlockList();
  for (const cidr of v4) list.addSubnet(cidr.split('/')[0]!, Number(cidr.split('/')[1]), 'ipv4');
  for (const cidr of v6) list.addSubnet(cidr.split('/')[0]!, Number(cidr.split('/')[1]), 'ipv6');
  return list;
}

/** Every IPv4 range that is not reachable, routable public unicast (RFC 6890 special-purpose registry). */
const NON_PUBLIC = blockList(
  [
    '0.0.0.0/8', '10.0.0.0/8', '100.64.0.0/10', '127.0.0.0/8', '169.254.0.0/16', '172.16.0.0/12',
    '192.0.0.0/24', '192.0.2.0/24', '192.88.99.0/24', '192.168.0.0/16', '198.18.0.0/15', '198.51.100.0/24',
    '203.0.113.0/24', '224.0.0.0/4', '240.0.0.0/4', // 240/4 includes 255.255.255.255
    // Not special-purpose but not a public site either: Azure's WireServer, the platform endpoint every Azure VM
    // reaches at this fixed address (goal state, extension settings), like a metadata service.
    '168.63.129.16/32',
  ],
  // Public IPv6 is an allow-list (GLOBAL_V6 below); these are the special ranges carved out of 2000::/3:
  // IETF protocol assignments incl. Teredo (2001::/23), documentation (2001:db8::/32, 3fff::/20). And, checked before
  // the IPv4 address they embed, the deprecated IPv4-compatible (::/96, which holds :: and ::1) and SIIT's
  // IPv4-translated (::ffff:0:0:0/96) forms: they reach a host only through a tunnel or a translator, so even one
  // carrying a public address is not a public target.
  ['2001::/23', '2001:db8::/32', '3fff::/20', '::/96', '::ffff:0:0:0/96'],
);
/** Only global unicast is public; this excludes ::, ::1, ::/96, fc00::/7, fe80::/10, ff00::/8 in one rule. */
const GLOBAL_V6 = blockList([], ['2000::/3']);
/**
 * Refused even with allowPrivate: link-local is where most metadata services answer; the others sit at fixed
 * addresses outside it (Alibaba Cloud's in CGNAT space, Oracle Cloud's in IETF space, Azure's WireServer at a
 * public-looking one, AWS's IPv6 one in ULA space), which private targets would otherwise let through.
 */
const METADATA = blockList(
  ['169.254.0.0/16', '100.100.100.200/32', '192.0.0.192/32', '168.63.129.16/32'],
  ['fe80::/10', 'fd00:ec2::254/128'],
);

/**
 * Whether `ip` is public unicast that an outbound request may reach. Anything that is not a valid IP
 * literal is reported as not public (fail closed).
 */
export function isPublicAddress(ip: string): boolean {
  const bare = bareIp(ip);
  const family = isIP(bare);
  if (family === 4) return !NON_PUBLIC.check(bare, 'ipv4');
  if (family !== 6) return false;
  if (NON_PUBLIC.check(bare, 'ipv6')) return false;
  const inner = embeddedIPv4(bare);
  if (inner !== null) return isPublicAddress(inner);
  return GLOBAL_V6.check(bare, 'ipv6');
}

/**
 * Whether `ip` is a cloud metadata address, looking through every IPv6 form that carries an IPv4 address
 * (`embeddedIPv4`, the same reading `isPublicAddress` makes; and every reading of the forms whose embedding is not
 * fixed, `ambiguousEmbeddedIPv4s`). Anything that is not a valid IP literal is one
 * (fail closed).
 */
function isMetadataAddress(ip: string): boolean {
  const bare = bareIp(ip);
  const family = isIP(bare);
  if (family === 4) return METADATA.check(bare, 'ipv4');
  if (family !== 6) return true;
  const inner = embeddedIPv4(bare);
  if (inner !== null) return METADATA.check(inner, 'ipv4');
  if (ambiguousEmbeddedIPv4s(bare).some((v4) => METADATA.check(v4, 'ipv4'))) return true;
  return METADATA.check(bare, 'ipv6');
}

/**
 * Names that only mean something inside a network (RFC 6761 `localhost`, mDNS `.local`, `.internal` as in
 * `metadata.google.internal`, home networks). Single-label names are refused too: they resolve through the
 * resolver's search domains (`redis`, `metadata`), and no public site lives at one.
 */
function isInternalName(hostname: string): boolean {
  // Without the root label's dot(s).
  const name = withoutTrailing(hostname.toLowerCase(), '.');
  return !name.includes('.') || /(^|\.)(localhost|local|internal|localdomain|home\.arpa)$/.test(name);
}

function blocked(host: string): AppError {
  // Deliberately no resolved address in the message, and the same answer for a name that does not resolve (below):
  // either difference would turn the guard into an oracle for mapping internal DNS names.
  return new AppError('private_url_blocked', {
    message: `Outbound requests to "${host}" are not allowed: it does not resolve to public addresses only.`,
  });
}

/** Throws private_url_blocked unless every one of `addresses` may be contacted. */
function assertAllowed(host: string, addresses: string[], allowPrivate: boolean): void {
  const refused = allowPrivate ? isMetadataAddress : (ip: string) => !isPublicAddress(ip);
  if (addresses.some(refused)) throw blocked(host);
}

/**
 * A lookup the check stopped waiting for: not an answer about the name, so retryable rather than "does not resolve".
 * Its message is shown (`publicMessage`): it names only the caller's own host and why to retry.
 */
class LookupUnavailable extends AppError {
  constructor(message: string) {
    super('unavailable', { message, publicMessage: true, headers: { 'retry-after': RETRY_AFTER_SECONDS } });
  }
}

/** `lookup(hostname)` within the thread-pool shares and the time bound above (LOOKUP_TIMEOUT_MS says why). */
async function boundedLookup(hostname: string, lookup: OutboundLookup, timeoutMs: number, tenant: string): Promise<Array<{ address: string; family: number }>> {
  const ofTenant = tenantLookupsInFlight.get(tenant) ?? 0;
  if (lookupsInFlight >= MAX_LOOKUPS_IN_FLIGHT || ofTenant >= MAX_LOOKUPS_PER_TENANT) {
    throw new LookupUnavailable(`Too many host name lookups are in progress to check "${hostname}"; retry shortly.`);
  }
  lookupsInFlight++;
  tenantLookupsInFlight.set(tenant, ofTenant + 1);
  const answer = (async () => lookup(hostname))();
  // The slot is given back when the lookup itself ends, not when the check stops waiting for it.
  const release = (): void => {
    lookupsInFlight--;
    const left = tenantLookupsInFlight.get(tenant)! - 1;
    if (left === 0) tenantLookupsInFlight.delete(tenant);
    else tenantLookupsInFlight.set(tenant, left);
  };
  answer.then(release, release);
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new LookupUnavailable(`The host "${hostname}" did not resolve within ${timeoutMs} ms; retry later.`)), timeoutMs);
  });
  try {
    return await Promise.race([answer, late]);
  } finally {
    clearTimeout(timer);
  }
}

async function resolveAll(hostname: string, options: UrlGuardOptions): Promise<Array<{ address: string; family: number }>> {
  let records: Array<{ address: string; family: number }>;
  try {
    records = await boundedLookup(hostname, options.lookup ?? defaultLookup, options.lookupTimeoutMs ?? LOOKUP_TIMEOUT_MS, options.tenantId ?? '');
  } catch (cause) {
    if (cause instanceof LookupUnavailable) throw cause;
    throw new AppError('invalid_request', { message: `The host "${hostname}" does not resolve.`, cause });
  }
  if (records.length === 0) throw new AppError('invalid_request', { message: `The host "${hostname}" does not resolve.` });
  return records;
}

/**
 * Validates an outbound URL and resolves its host. Throws AppError `invalid_request` for a malformed URL,
 * a scheme other than http/https, credentials in the URL, an empty host (or, with `allowPrivate`, an unresolvable
 * one), and `private_url_blocked` when the host is an internal name, does not resolve, or any of its addresses is
 * non-public.
 */
export async function checkOutboundUrl(url: string, options: UrlGuardOptions = {}): Promise<{ url: URL; addresses: string[] }> {
  const allowPrivate = options.allowPrivate ?? false;
  let parsed: URL;
  try {
    // The WHATWG parser normalises every IPv4 spelling (2130706433, 0177.0.0.1, 0x7f.1, 127.1) to dotted
    // decimal and IPv6 to its canonical compressed form, so the checks below only see canonical literals.
    parsed = new URL(url);
  } catch {
    throw new AppError('invalid_request', { message: 'The URL is malformed.' });
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new AppError('invalid_request', { message: `Only http and https URLs are allowed, not "${parsed.protocol}".` });
  }
  // `http://@host/` parses with an empty username, so also look for "@" in the raw authority. Credentials
  // are refused rather than stripped: they are never needed here and hint at a confused-parser trick.
  const authority = /^\s*[a-z][a-z0-9+.-]*:[\\/]*([^\\/?#]*)/i.exec(url)?.[1] ?? '';
  if (parsed.username || parsed.password || authority.includes('@')) {
    throw new AppError('invalid_request', { message: 'URLs with user credentials are not allowed.' });
  }
  const host = bareIp(parsed.hostname);
  if (host === '') throw new AppError('invalid_request', { message: 'The URL has no host.' });
  if (isIP(host)) {
    assertAllowed(host, [host], allowPrivate);
    return { url: parsed, addresses: [host] };
  }
  if (!allowPrivate && isInternalName(host)) throw blocked(host);
  let addresses: string[];
  try {
    addresses = (await resolveAll(host, options)).map((r) => r.address);
  } catch (error) {
    // A name the resolver does not know answers as one resolving to a private address would: "does not resolve"
    // against `private_url_blocked` told a caller which names exist inside the network. Where private targets are
    // allowed there is nothing to map, and the plain reason helps. A lookup not waited for says nothing about the
    // name (internal ones answer at once), and retrying may well succeed.
    if (allowPrivate || error instanceof LookupUnavailable) throw error;
    throw blocked(host);
  }
  assertAllowed(host, addresses, allowPrivate);
  return { url: parsed, addresses };
}

/**
 * An undici Agent that re-applies the guard at connect time: its DNS lookup resolves, checks every address
 * and hands exactly the checked addresses to the socket, and IP-literal hosts (which Node connects to
 * without any lookup) are checked before connecting. Use it as the `dispatcher` of every guarded request.
 */
export function createGuardedDispatcher(options: UrlGuardOptions = {}): Agent {
  const allowPrivate = options.allowPrivate ?? false;
  const lookup: LookupFunction = (hostname, lookupOptions, callback) => {
    (async () => {
      if (!allowPrivate && isInternalName(hostname)) throw blocked(hostname);
      const records = await resolveAll(hostname, options);
      assertAllowed(hostname, records.map((r) => r.address), allowPrivate);
      const wanted = lookupOptions.family === 4 || lookupOptions.family === 6 ? records.filter((r) => r.family === lookupOptions.family) : records;
      if (wanted.length === 0) throw new AppError('invalid_request', { message: `The host "${hostname}" does not resolve.` });
      return wanted;
    })().then(
      // Node asks for the whole list when autoSelectFamily (happy eyeballs) is on, for one address otherwise.
      (wanted) => (lookupOptions.all ? callback(null, wanted) : callback(null, wanted[0]!.address, wanted[0]!.family)),
      (err: Error) => callback(err, ''),
    );
  };
  const connector = buildConnector({ lookup });
  return new Agent({
    connect: (connectOptions, callback) => {
      const literal = bareIp(connectOptions.hostname);
      if (isIP(literal)) {
        try {
          assertAllowed(literal, [literal], allowPrivate);
        } catch (err) {
          callback(err as Error, null);
          return;
        }
      }
      connector(connectOptions, callback);
    },
  });
}

export interface GuardedFetchInit extends UrlGuardOptions {
  method?: string;
  headers?: Record<string, string>;
  body?: string | Uint8Array;
  signal?: AbortSignal;
  /** Redirects followed before failing; default 5. */
  maxRedirects?: number;
  /** Bound on the whole exchange, redirects and body included; default 10 000 ms. */
  timeoutMs?: number;
  /** Bound on the response body; default 5 MiB. */
  maxBytes?: number;
}

export interface GuardedResponse {
  status: number;
  headers: Headers;
  body: Buffer;
  /** The URL of the final response, after redirects. */
  url: string;
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);
/** Dropped when a redirect leaves the origin, as browsers do, so credentials never follow to another host. */
const CREDENTIAL_HEADERS = ['authorization', 'cookie', 'proxy-authorization'];

/**
 * Fetches a user-influenced URL through the guard: every hop (the first URL and each redirect Location,
 * resolved against the current URL) is checked with `checkOutboundUrl` and connected through a guarded
 * dispatcher. Fails with `invalid_request` past `maxRedirects`, `unavailable` on timeout or network error,
 * and `payload_too_large` when the response body exceeds `maxBytes`.
 */
export async function guardedFetch(url: string, init: GuardedFetchInit = {}): Promise<GuardedResponse> {
  const { allowPrivate = false, lookup, lookupTimeoutMs, tenantId, maxRedirects = 5, timeoutMs = 10_000, maxBytes = 5 * 1024 * 1024 } = init;
  const timeout = AbortSignal.timeout(timeoutMs);
  const signal = init.signal ? AbortSignal.any([init.signal, timeout]) : timeout;
  const guard: UrlGuardOptions = {
    allowPrivate,
    ...(lookup ? { lookup } : {}),
    ...(lookupTimeoutMs !== undefined ? { lookupTimeoutMs } : {}),
    ...(tenantId !== undefined ? { tenantId } : {}),
  };
  const dispatcher = createGuardedDispatcher(guard);
  let method = (init.method ?? 'GET').toUpperCase();
  let body = init.body;
  const headers = Object.fromEntries(Object.entries(init.headers ?? {}).map(([k, v]) => [k.toLowerCase(), v]));
  let current = url;
  let host = '';
  try {
    for (let redirects = 0; ; redirects++) {
      const { url: target } = await checkOutboundUrl(current, guard);
      host = target.hostname;
      const res = await request(target, { dispatcher, method, headers, body: body ?? null, signal });
      const location = [res.headers.location].flat()[0];
      if (!REDIRECTS.has(res.statusCode) || location === undefined) {
        return { status: res.statusCode, headers: toHeaders(res.headers), body: await readBounded(res.body, maxBytes, host), url: target.href };
      }
      await res.body.dump(); // the redirect's own body is never needed; dump() discards it (bounded) safely
      if (redirects >= maxRedirects) {
        throw new AppError('invalid_request', { message: `Too many redirects (more than ${maxRedirects}) fetching "${host}".` });
      }
      const next = new URL(location, target);
      // Same method rewriting as fetch: 303 turns everything but HEAD into GET, 301/302 turn POST into GET.
      if ((res.statusCode === 303 && method !== 'HEAD') || (res.statusCode <= 302 && method === 'POST')) {
        method = 'GET';
        body = undefined;
        for (const name of ['content-type', 'content-length']) delete headers[name];
      }
      if (next.origin !== target.origin) for (const name of CREDENTIAL_HEADERS) delete headers[name];
      current = next.href;
    }
  } catch (err) {
    throw translateError(err, host, timeoutMs, timeout, init.signal);
  } finally {
    await dispatcher.destroy().catch(() => undefined);
  }
}

async function readBounded(stream: AsyncIterable<Uint8Array>, maxBytes: number, host: string): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of stream) {
    total += chunk.byteLength;
    if (total > maxBytes) {
      // Leaving the for-await loop destroys the stream: the download stops here, it is not drained.
      throw new AppError('payload_too_large', { message: `The response from "${host}" exceeds ${maxBytes} bytes.` });
    }
    chunks.push(Buffer.from(chunk));
  }
  return Buffer.concat(chunks);
}

function toHeaders(raw: Record<string, string | string[] | undefined>): Headers {
  const headers = new Headers();
  for (const [name, value] of Object.entries(raw)) for (const v of [value ?? []].flat()) headers.append(name, v);
  return headers;
}

/** Maps whatever undici or Node threw to an AppError; a guard refusal may arrive wrapped as a cause. */
function translateError(err: unknown, host: string, timeoutMs: number, timeout: AbortSignal, callerSignal?: AbortSignal): unknown {
  for (let e: unknown = err; e instanceof Error; e = e.cause) if (isAppError(e)) return e;
  if (timeout.aborted) {
    return new AppError('unavailable', { message: `"${host}" did not respond within ${timeoutMs} ms.`, cause: err });
  }
  if (callerSignal?.aborted) return err; // the caller's own abort: not ours to rename
  if (err instanceof TypeError && (err as { code?: string }).code === 'ERR_INVALID_URL') {
    return new AppError('invalid_request', { message: `"${host}" sent an invalid redirect location.` });
  }
  const code = (err as { code?: unknown } | null)?.code;
  const reason = typeof code === 'string' ? ` (${code})` : '';
  return new AppError('unavailable', { message: `Could not fetch from "${host}"${reason}.`, cause: err });
}
