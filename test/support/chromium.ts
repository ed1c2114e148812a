/**
 * For the account pages in a real browser (test/browser/): headless Chromium (Debian's /usr/bin/chromium, driven by
 * playwright-core) launched once per test file, and svc listening in-process on 127.0.0.1 with its e-mails captured by
 * a mailer override, one svc per test (public signup, logins and the lockout count per address and per IP, and some
 * tests rename the organization: shared, they would meet each other's limits and names).
 *
 * Without Chromium the tests fail (never skip): CI installs it (.ci/run).
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { after, before, type TestContext } from 'node:test';
import { chromium, type Browser, type BrowserContext, type BrowserContextOptions, type Page } from 'playwright-core';
import { loadConfig } from '../../src/config.ts';
import { buildApp } from '../../src/http/app.ts';
import { createServices } from '../../src/services.ts';
import { openStore } from '../../src/store/store.ts';
import { countingHasher } from './accounts.ts';
import { loadScaled } from './load-scaled.ts';

const CHROMIUM = '/usr/bin/chromium';
/** playwright's own default bound on a launch and on each wait of a page, before the load grows it. */
const PLAYWRIGHT_TIMEOUT_MS = 30_000;
const BOOTSTRAP = 'svc_browser_test_bootstrap_token_0123456789';
export const FIRST_PASSWORD = 'correct horse battery';
export const SECOND_PASSWORD = 'an even better passphrase';

interface Mail {
  to: string;
  subject: string;
  text: string;
  html: string;
}

export interface Svc {
  address: string;
  mail: Mail[];
  /** A call to svc's API as the bootstrap token (platform admin). */
  admin(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }>;
}

export async function startSvc(t: TestContext, env: Record<string, string> = {}): Promise<Svc> {
  const mail: Mail[] = [];
  const mailer = {
    async send(message: Mail) {
      mail.push(message);
    },
  };
  const config = loadConfig({ SVC_LOG_LEVEL: 'silent', SVC_API_KEY: BOOTSTRAP, ...env }, { dataDir: null });
  const store = openStore({ dataDir: config.dataDir });
  // scrypt at the accounts tests' cost: at production cost (N = 2^17) every hash and verification (a signup, a sign-in,
  // each of the lockout's ten wrong passwords) took 0.3-2 s of a loaded 2-core machine, over half of the browser tests'
  // time. The pages do not depend on the cost; test/accounts/passwords-email.test.ts asserts the production parameters.
  const services = await createServices(config, store, { mailer, passwordHasher: countingHasher() });
  const app = await buildApp(services);
  const address = await app.listen({ host: '127.0.0.1', port: 0 });
  t.after(async () => {
    await app.close();
    await store.close();
  });
  const admin: Svc['admin'] = async (method, path, body) => {
    const response = await fetch(`${address}/api/v1${path}`, {
      method,
      headers: { authorization: `Bearer ${BOOTSTRAP}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await response.text();
    return { status: response.status, body: text ? JSON.parse(text) : null };
  };
  return { address, mail, admin };
}

/** The e-mail to `to` whose text holds a link to `page`, waited for (some are sent after the answer); its token. */
export async function linkToken(svc: Svc, to: string, page: string): Promise<{ url: URL; token: string }> {
  const deadline = Date.now() + loadScaled(10_000);
  for (;;) {
    for (const message of [...svc.mail].reverse()) {
      if (message.to !== to) continue;
      const match = new RegExp(`https?://\\S+${page}\\?token=[A-Za-z0-9_-]+`).exec(message.text);
      if (match) {
        const url = new URL(match[0]);
        assert.ok(message.html.includes(url.searchParams.get('token')!), 'the HTML part carries the same link');
        return { url, token: url.searchParams.get('token')! };
      }
    }
    if (Date.now() > deadline) throw new Error(`no e-mail to ${to} linking to ${page}: ${JSON.stringify(svc.mail.map((m) => m.subject))}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Fails the test on any script error or blocked resource (a CSP violation is reported as a console error). */
export function watch(page: Page): string[] {
  const problems: string[] = [];
  page.on('pageerror', (error) => problems.push(`script error: ${error.message}`));
  page.on('console', (message) => {
    // 4xx answers the page asked for on purpose (`/auth/me` while signed out) are logged by Chromium as errors.
    if (message.type() === 'error' && !/Failed to load resource: the server responded with a status of 4\d\d/.test(message.text())) {
      problems.push(`console: ${message.text()}`);
    }
  });
  return problems;
}

/** Sign `email` up over the API (public signup on), as a user who already has an account. */
export async function signUp(svc: Svc, email: string, name: string): Promise<void> {
  const signup = await fetch(`${svc.address}/api/v1/auth/signup`, {
    method: 'POST',
    // Signup sets the session cookie, so it must name svc's own origin (docs/accounts.md, CSRF).
    headers: { 'content-type': 'application/json', origin: svc.address },
    body: JSON.stringify({ email, name, password: FIRST_PASSWORD }),
  });
  assert.equal(signup.status, 201, await signup.text());
}

/** End the browser context's session behind the page's back (signed out in another tab). */
export async function endSession(context: BrowserContext, svc: Svc): Promise<void> {
  const session = (await context.cookies(svc.address)).find((c) => c.name === 'svc_session');
  assert.ok(session);
  const logout = await fetch(`${svc.address}/api/v1/auth/logout`, {
    method: 'POST',
    headers: { cookie: `svc_session=${session.value}`, origin: svc.address },
  });
  assert.equal(logout.status, 200);
}

/** Fill /login's form with `email` and `password` and send it. */
export async function signIn(page: Page, email: string, password: string): Promise<void> {
  await page.getByLabel('E-mail').fill(email);
  await page.getByLabel('Password', { exact: true }).fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
}

export function text(page: Page, selector: string): Promise<string> {
  return page.locator(selector).innerText();
}

/**
 * One Chromium for the calling test file, launched before its first test and closed after its last; call at the
 * file's top level. `requireBrowser` fails a test when Chromium is missing or did not start.
 */
export function chromiumForFile(): {
  requireBrowser(): Browser;
  /** A fresh browser profile (cookies, storage) for the test, closed after it. */
  newContext(t: TestContext, options?: BrowserContextOptions): Promise<BrowserContext>;
} {
  let browser: Browser | undefined;
  before(async () => {
    if (!existsSync(CHROMIUM)) return;
    browser = await chromium.launch({ executablePath: CHROMIUM, timeout: loadScaled(PLAYWRIGHT_TIMEOUT_MS) });
  });
  after(async () => {
    await browser?.close();
  });

  function requireBrowser(): Browser {
    assert.ok(
      existsSync(CHROMIUM),
      `Chromium is missing at ${CHROMIUM}: the browser tests need Debian's chromium package (apt-get install chromium; .ci/run installs it)`,
    );
    assert.ok(browser, 'Chromium did not start');
    return browser;
  }

  async function newContext(t: TestContext, options?: BrowserContextOptions): Promise<BrowserContext> {
    const context = await requireBrowser().newContext(options);
    // Every wait of its pages (waitFor, waitForURL, click...): a page drawn slowly on a loaded machine is not a failure.
    context.setDefaultTimeout(loadScaled(PLAYWRIGHT_TIMEOUT_MS));
    t.after(() => context.close());
    return context;
  }

  return { requireBrowser, newContext };
}
