// /: what a browser gets at svc's address until the dashboard lands there (dashboard/README.md). Who is signed in and
// where (GET /api/v1/auth/me), sign-in or sign-out, and the base URLs SDKs take, as this browser reaches svc.
import { $, api, busy, errorCode, errorText, showError, showOnly, showSignedInAs, showStatus } from './common.js';

const origin = window.location.origin;
$('base-openai').textContent = `${origin}/v1`;
$('base-messages').textContent = origin;
$('base-api').textContent = `${origin}/api/v1`;

function showSignedOut(note) {
  showOnly('signed-out');
  showStatus(note ?? '');
}

$('sign-out').addEventListener('click', async () => {
  const result = await busy($('signed-in'), () => api('POST', '/auth/logout'));
  if (!result.ok) return showError(errorText(result));
  showSignedOut('You are signed out.');
  $('sign-in-link').focus();
});

// The one place a signed-in user can ask for another verification link, which /verify-email's refusal points to: a
// link used twice, expired (7 days) or lost leaves no other way to verify, and an unverified owner's trial stays Free.
$('resend-verification').addEventListener('click', async () => {
  const result = await busy($('unverified'), () => api('POST', '/auth/verification/resend'));
  if (result.ok) return showStatus('A new verification link is on its way. It replaces the links sent before.');
  // The session ended after the page loaded (signed out elsewhere, a password reset): svc's 401 speaks of a session
  // the page showed as live.
  if (result.status === 401) {
    showSignedOut();
    return showError('Your session has ended. Sign in again.');
  }
  if (errorCode(result) === 'already_verified') {
    $('unverified').hidden = true;
    return showStatus('Your e-mail address is verified.');
  }
  showError(errorText(result));
});

const me = await api('GET', '/auth/me');
if (me.ok && me.data?.user) {
  showSignedInAs($('signed-in-as'), me.data);
  $('finish-password').hidden = !me.data.mustChangePassword;
  $('unverified').hidden = me.data.user.emailVerified !== false;
  showOnly('signed-in');
} else {
  // 401 (no session) and 403 (svc open to everyone, or another identity than a signed-in user) alike.
  showSignedOut();
}
