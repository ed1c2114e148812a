// /: what a browser gets at svc's address until the dashboard lands there (dashboard/README.md). Who is signed in and
// where (GET /api/v1/auth/me), sign-in or sign-out, and the base URLs SDKs take, as this browser reaches svc.
import { $, api, busy, errorText, showError, showOnly, showSignedInAs, showStatus } from './common.js';

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

const me = await api('GET', '/auth/me');
if (me.ok && me.data?.user) {
  showSignedInAs($('signed-in-as'), me.data);
  $('finish-password').hidden = !me.data.mustChangePassword;
  showOnly('signed-in');
} else {
  // 401 (no session) and 403 (svc open to everyone, or another identity than a signed-in user) alike.
  showSignedOut();
}
