/**
 * Helpers for account tests: an app whose e-mails are captured, with a cheap scrypt cost (production parameters are
 * asserted on their own in test/accounts/passwords-email.test.ts), a movable clock, and `Browser`, a cookie jar that
 * sends the same-origin `Origin` header a real browser would.
 */
import type { TestContext } from 'node:test';
import type { FastifyInstance, InjectOptions } from 'fastify';
import { createPasswordHasher, type PasswordHasher } from '../../src/accounts/passwords.ts';
import type { EmailMessage, Mailer } from '../../src/email/transport.ts';
import type { ServiceOverrides } from '../../src/services.ts';
import type { Store } from '../../src/store/store.ts';
import { build, json, type Built } from './build.ts';

export const ORIGIN = 'http://localhost:80';

export class MovableClock {
  constructor(public t = Date.UTC(2026, 10, 23, 12)) {}
  now = () => this.t;
  advance(ms: number): void {
    this.t += ms;
  }
}

export class CapturedMail implements Mailer {
  readonly sent: EmailMessage[] = [];
  /** When set, the next sends fail like an unreachable provider. */
  failing = false;
  private next: { gate: Promise<void>; held: () => void } | null = null;
  /** Hold the next send as a slow provider would: resolves, once it waits, with the function that lets it go on. */
  hold(): Promise<() => void> {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    return new Promise((resolve) => (this.next = { gate, held: () => resolve(release) }));
  }
  async send(message: EmailMessage): Promise<void> {
    const waiting = this.next;
    if (waiting) {
      this.next = null;
      waiting.held();
      await waiting.gate;
    }
    if (this.failing) {
      const { EmailDeliveryError } = await import('../../src/email/transport.ts');
      throw new EmailDeliveryError('provider down (test)');
    }
    this.sent.push(message);
  }
  /** The newest message to `to`. */
  last(to: string): EmailMessage {
    const found = this.sent.filter((m) => m.to === to).at(-1);
    if (!found) throw new Error(`no e-mail to ${to}; sent: ${this.sent.map((m) => m.to).join(', ')}`);
    return found;
  }
  /** The token of the newest link to `path` in an e-mail to `to`. */
  token(to: string, path: string): string {
    const match = new RegExp(`${path}\\?token=([A-Za-z0-9_-]+)`).exec(this.last(to).text);
    if (!match) throw new Error(`no ${path} link in the e-mail to ${to}`);
    return match[1]!;
  }
}

/** A hasher that counts what it did, at a cost tests can afford. */
export function countingHasher(costLog2 = 10): PasswordHasher & { calls: { hash: number; verify: number; dummy: number } } {
  const inner = createPasswordHasher({ costLog2 });
  const calls = { hash: 0, verify: 0, dummy: 0 };
  return {
    calls,
    hash: (p, lane) => (calls.hash++, inner.hash(p, lane)),
    verify: (p, s, lane) => (calls.verify++, inner.verify(p, s, lane)),
    verifyDummy: (p) => (calls.dummy++, inner.verifyDummy(p)),
  };
}

/**
 * A counting hasher whose next hash or verify can be held once its work is done, so a test can change the data
 * while a request waits on its password (as a slow scrypt lets anyone do): `const release = await hasher.hold()`
 * resolves when a call is held; `release()` lets it go on.
 */
export function gatedHasher() {
  const inner = countingHasher();
  let next: { gate: Promise<void>; held: () => void } | null = null;
  async function pause(): Promise<void> {
    const waiting = next;
    if (!waiting) return;
    next = null;
    waiting.held();
    await waiting.gate;
  }
  return {
    ...inner,
    hash: async (password: string, lane?: Parameters<PasswordHasher['hash']>[1]) => {
      const hashed = await inner.hash(password, lane);
      await pause();
      return hashed;
    },
    verify: async (password: string, stored: string, lane?: Parameters<PasswordHasher['verify']>[2]) => {
      const verdict = await inner.verify(password, stored, lane);
      await pause();
      return verdict;
    },
    hold(): Promise<() => void> {
      let release!: () => void;
      const gate = new Promise<void>((resolve) => (release = resolve));
      return new Promise((resolve) => (next = { gate, held: () => resolve(release) }));
    },
  };
}

export interface AccountsApp extends Built {
  mail: CapturedMail;
  clock: MovableClock;
  hasher: ReturnType<typeof countingHasher>;
}

export async function buildAccounts(
  t: TestContext,
  options: { env?: Record<string, string>; overrides?: ServiceOverrides; dataDir?: string; wrapStore?: (store: Store) => Store } = {},
): Promise<AccountsApp> {
  const mail = new CapturedMail();
  const clock = new MovableClock();
  const hasher = countingHasher();
  const built = await build(t, {
    env: { SVC_APP_BASE_URL: 'https://app.example.test', ...options.env },
    ...(options.dataDir ? { dataDir: options.dataDir } : {}),
    ...(options.wrapStore ? { wrapStore: options.wrapStore } : {}),
    overrides: { mailer: mail, clock, passwordHasher: hasher, resetRequestFloorMs: 30, log: { warn() {} }, ...options.overrides },
  });
  return { ...built, mail, clock, hasher };
}

/** Headers of a platform operator: the bootstrap token. */
export function operator(token: string, orgId?: string): Record<string, string> {
  return { authorization: `Bearer ${token}`, ...(orgId ? { 'x-svc-tenant': orgId } : {}) };
}

/** The `svc_session` value a response set, if any. */
export function sessionCookieOf(response: { headers: Record<string, unknown> }): string | null {
  const raw = response.headers['set-cookie'];
  const all = Array.isArray(raw) ? raw : raw === undefined ? [] : [String(raw)];
  for (const cookie of all) {
    const match = /^svc_session=([^;]*)/.exec(cookie);
    if (match) return match[1]!;
  }
  return null;
}

/** A browser-like client: keeps the session cookie and sends the page's own Origin. */
export class Browser {
  cookie: string | null = null;
  constructor(private readonly app: FastifyInstance, private readonly ip = '203.0.113.10') {}

  async request(method: InjectOptions['method'], url: string, payload?: unknown, headers: Record<string, string> = {}) {
    const response = await this.app.inject({
      method,
      url,
      remoteAddress: this.ip,
      headers: { origin: ORIGIN, ...(this.cookie ? { cookie: `svc_session=${this.cookie}` } : {}), ...headers },
      ...(payload !== undefined ? { payload: payload as InjectOptions['payload'] } : {}),
    });
    const set = sessionCookieOf(response);
    if (set !== null) this.cookie = set === '' ? null : set;
    return response;
  }
  get = (url: string, headers?: Record<string, string>) => this.request('GET', url, undefined, headers);
  post = (url: string, payload?: unknown, headers?: Record<string, string>) => this.request('POST', url, payload ?? {}, headers);
  patch = (url: string, payload?: unknown) => this.request('PATCH', url, payload ?? {});
  delete = (url: string, payload?: unknown) => this.request('DELETE', url, payload);

  async login(email: string, password: string) {
    const response = await this.post('/api/v1/auth/login', { email, password });
    if (response.statusCode !== 200) throw new Error(`login failed: ${response.statusCode} ${response.body}`);
    return json(response);
  }
}

export const BOOT = 'bootstrap-token-accounts-tests-0001';
export const ADMIN = { email: 'root@example.test', password: 'correct horse battery' };

/** An app in login mode with a bootstrap admin (owner of the default org) and the bootstrap token. */
export async function buildWithAdmin(
  t: TestContext,
  env: Record<string, string> = {},
  overrides: ServiceOverrides = {},
  wrapStore?: (store: Store) => Store,
) {
  const app = await buildAccounts(t, {
    env: { SVC_API_KEY: BOOT, SVC_ADMIN_EMAIL: ADMIN.email, SVC_ADMIN_PASSWORD: ADMIN.password, ...env },
    overrides,
    ...(wrapStore ? { wrapStore } : {}),
  });
  const admin = new Browser(app.app);
  await admin.login(ADMIN.email, ADMIN.password);
  return { ...app, admin };
}

/** Create a user through the API (as the operator) and sign them in after changing the temporary password. */
export async function makeUser(
  app: FastifyInstance,
  input: { email: string; password?: string; orgRole?: 'owner' | 'admin' | 'member'; orgId?: string; role?: 'admin' | 'member' },
  ip?: string,
): Promise<{ browser: Browser; id: string }> {
  const temp = 'temporary-pass-1';
  const created = await app.inject({
    method: 'POST',
    url: '/api/v1/users',
    headers: operator(BOOT, input.orgId),
    payload: { email: input.email, tempPassword: temp, orgRole: input.orgRole ?? 'member', ...(input.role ? { role: input.role } : {}) },
  });
  if (created.statusCode !== 201) throw new Error(`user create failed: ${created.body}`);
  const browser = new Browser(app, ip);
  await browser.login(input.email, temp);
  const changed = await browser.post('/api/v1/auth/change-password', { current: temp, new: input.password ?? 'a-good-password' });
  if (changed.statusCode !== 200) throw new Error(`password change failed: ${changed.body}`);
  return { browser, id: json(created).user.id };
}
