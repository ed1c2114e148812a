// Shared by the account pages (login, accept-invite, reset-password, verify-email) and the home page (/): calls to
// svc's management API, the token in the address bar, the alert and status regions, who is signed in, and the
// password rules of docs/accounts.md.
// Plain ES module, no framework and nothing inline, so the pages run under a strict Content-Security-Policy.

/** Same-origin call to `/api/v1`. Resolves with `{ok, status, data, retryAfter}`; never throws. */
export async function api(method, path, body) {
  const init = { method, credentials: 'same-origin', headers: { accept: 'application/json' } };
  if (body !== undefined) {
    init.headers['content-type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(`/api/v1${path}`, init);
  } catch {
    return failure(0, 'network_error', 'svc could not be reached. Check your connection and try again.');
  }
  let data = null;
  try {
    data = await response.json();
  } catch {
    // A proxy's HTML error page, or an empty body.
  }
  const retryAfter = Number(response.headers.get('retry-after')) || null;
  if (!response.ok && !(data && data.error)) {
    return { ...failure(response.status, 'http_error', `svc answered ${response.status}. Try again in a moment.`), retryAfter };
  }
  return { ok: response.ok, status: response.status, data, retryAfter };
}

function failure(status, code, message) {
  return { ok: false, status, data: { error: { code, message } }, retryAfter: null };
}

/** The error code of a failed call (`invalid_credentials`, `invalid_token`, ...). */
export function errorCode(result) {
  return result.data?.error?.code ?? 'http_error';
}

/**
 * A sentence for a failed call: the API's own message, plus when to retry after a 429. svc's 429 messages end with
 * their own "Retry after 893 s."; that sentence gives way to the wait of `retry-after` in words ("Try again in 15
 * minutes."), so a locked-out sign-in does not say the wait twice, in seconds.
 */
export function errorText(result) {
  let text = result.data?.error?.message || 'Something went wrong.';
  if (result.status === 429 && result.retryAfter) {
    text = `${text.replace(/\s*Retry after [^.]*\.?\s*$/, '')} Try again in ${waitText(result.retryAfter)}.`;
  }
  return text;
}

/** A wait in seconds as a person reads it: seconds up to two minutes, then whole minutes (rounded up). */
function waitText(seconds) {
  if (seconds < 120) return `${seconds} second${seconds === 1 ? '' : 's'}`;
  return `${Math.ceil(seconds / 60)} minutes`;
}

/**
 * Reads `?token=` and removes it from the address bar (and so from history and from anything that reads the URL
 * later), keeping the other parameters. Returns null when there is none.
 */
export function takeToken() {
  const url = new URL(window.location.href);
  const token = url.searchParams.get('token');
  if (token === null) return null;
  url.searchParams.delete('token');
  window.history.replaceState(null, '', url.pathname + url.search + url.hash);
  return token.trim() || null;
}

/**
 * Whether a token read from a link has the shape of those svc sends (base64url). Only such a token goes into an API
 * path: encodeURIComponent leaves dots alone and the URL parser resolves `.` and `..` (`%2e` too) as dot segments, so
 * `?token=..` made the invitation lookup `GET /api/v1/` and showed that route's answer. Anything else is a bad link.
 */
export function isTokenShaped(token) {
  return /^[A-Za-z0-9_-]+$/.test(token);
}

export function $(id) {
  const element = document.getElementById(id);
  if (!element) throw new Error(`missing #${id}`);
  return element;
}

/** The page's `role="alert"` region: errors. An empty message clears it. */
export function showError(message) {
  $('alert').textContent = message ?? '';
  if (message) $('status').textContent = '';
}

/** The page's `role="status"` region: progress and outcomes that are not errors. */
export function showStatus(message) {
  $('status').textContent = message ?? '';
  if (message) $('alert').textContent = '';
}

/** Shows exactly the sections named (by id) among those of the page that can be toggled. */
export function showOnly(...ids) {
  for (const section of document.querySelectorAll('[data-section]')) {
    section.hidden = !ids.includes(section.id);
  }
}

/** "Signed in as <email> in <org>." from a `GET /auth/me` answer, into `line`. */
export function showSignedInAs(line, me) {
  line.replaceChildren('Signed in as ', strong(me.user.email));
  if (me.org) line.append(' in ', strong(me.org.name), '.');
  else line.append('. You do not belong to any organization yet.');
}

function strong(text) {
  const element = document.createElement('strong');
  element.textContent = text;
  return element;
}

/**
 * Disables the controls of a form (or of any element holding some) while a call runs, so a double click does not send
 * twice. Disabling the focused control drops the focus to the document, so it is given back afterwards: a keyboard
 * user whose call failed (svc unreachable, an error with no field to point at) presses Enter again where they were,
 * instead of tabbing from the top.
 */
export async function busy(form, work) {
  const controls = form.querySelectorAll('button, input');
  const focused = form.contains(document.activeElement) ? document.activeElement : null;
  for (const control of controls) control.disabled = true;
  form.setAttribute('aria-busy', 'true');
  try {
    return await work();
  } finally {
    for (const control of controls) control.disabled = false;
    form.removeAttribute('aria-busy');
    // Only if nothing took the focus meanwhile; a form hidden by then cannot take it (focus() does nothing).
    if (focused && (document.activeElement === document.body || document.activeElement === null)) focused.focus();
  }
}

/** Marks one field invalid (or clears every mark with no field), moves focus there and says why. */
export function invalid(form, field, message) {
  for (const input of form.querySelectorAll('input')) input.removeAttribute('aria-invalid');
  if (field) {
    field.setAttribute('aria-invalid', 'true');
    field.focus();
  }
  showError(message);
  return false;
}

// docs/accounts.md "Passwords": 8 to 256 characters after NFKC normalization, counted in code points.
export const PASSWORD_MIN = 8;
export const PASSWORD_MAX = 256;

/** Why a new password breaks the rules, or null. The server checks again and has the last word. */
export function passwordProblem(password) {
  const length = [...password.normalize('NFKC')].length;
  if (length < PASSWORD_MIN) return `The password needs at least ${PASSWORD_MIN} characters.`;
  if (length > PASSWORD_MAX) return `The password can have at most ${PASSWORD_MAX} characters.`;
  return null;
}

/** Checks a new password and its confirmation field; marks the offending field. */
export function checkNewPassword(form, passwordInput, confirmInput) {
  const problem = passwordProblem(passwordInput.value);
  if (problem) return invalid(form, passwordInput, problem);
  if (confirmInput && confirmInput.value !== passwordInput.value) {
    return invalid(form, confirmInput, 'The two passwords do not match.');
  }
  invalid(form, null, '');
  return true;
}

/**
 * Where to go after signing in, from `?next=`: a same-origin path, as an absolute address on this origin; anything
 * else (other origins, `//host`, `javascript:`) is ignored, so the login page is no open redirect. Dot segments
 * resolve `/.//evil.example` to the path `//evil.example`, which read again as an address is another host: such a path
 * is ignored too, and what is returned is the absolute address, never a path to be read again.
 */
export function safeNext(value) {
  if (!value || !value.startsWith('/') || value.startsWith('//') || value.startsWith('/\\')) return null;
  try {
    const url = new URL(value, window.location.origin);
    if (url.origin !== window.location.origin || url.pathname.startsWith('//')) return null;
    return url.href;
  } catch {
    return null;
  }
}
