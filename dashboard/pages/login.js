// /login: e-mail and password -> POST /api/v1/auth/login; a change-password form when an administrator set a
// temporary password; "Signed in as ..." with sign-out. `?next=` (a same-origin path, e.g. /accept-invite) is where
// a fresh sign-in continues.
import { $, api, busy, checkNewPassword, errorCode, errorText, invalid, safeNext, showError, showOnly, showSignedInAs, showStatus } from './common.js';

const next = safeNext(new URLSearchParams(window.location.search).get('next'));

function showSignedIn(me, note) {
  showSignedInAs($('signed-in-as'), me);
  $('continue').hidden = !next;
  if (next) $('continue-link').href = next;
  $('title').textContent = 'Signed in';
  showOnly('signed-in');
  showStatus(note ?? '');
}

function showSignIn(note) {
  $('title').textContent = 'Sign in';
  showOnly('sign-in');
  showStatus(note ?? '');
  $('email').focus();
}

function showChangePassword(me) {
  $('change-username').value = me.user.email;
  $('title').textContent = 'Choose a new password';
  showOnly('change-password');
  $('current').focus();
}

/** After a successful sign-in or password change: continue to `next`, or say who is signed in. */
function signedIn(me, note) {
  if (me.mustChangePassword) return showChangePassword(me);
  if (next) return window.location.assign(next);
  showSignedIn(me, note);
}

$('sign-in').addEventListener('submit', async (event) => {
  event.preventDefault();
  const form = event.currentTarget;
  const email = $('email');
  const password = $('password');
  if (!email.value.trim()) return invalid(form, email, 'Enter your e-mail address.');
  if (!password.value) return invalid(form, password, 'Enter your password.');
  invalid(form, null, '');
  const result = await busy(form, () => api('POST', '/auth/login', { email: email.value.trim(), password: password.value }));
  if (!result.ok) {
    password.value = '';
    return invalid(form, errorCode(result) === 'invalid_credentials' ? password : null, errorText(result));
  }
  password.value = '';
  signedIn(result.data);
});

$('change-password').addEventListener('submit', async (event) => {
  event.preventDefault();
  const form = event.currentTarget;
  const current = $('current');
  const fresh = $('new-password');
  const confirm = $('confirm');
  if (!current.value) return invalid(form, current, 'Enter your current password.');
  if (!checkNewPassword(form, fresh, confirm)) return;
  if (fresh.value === current.value) return invalid(form, fresh, 'The new password must differ from the current one.');
  const result = await busy(form, () => api('POST', '/auth/change-password', { current: current.value, new: fresh.value }));
  if (!result.ok) {
    // The session ended meanwhile (signed out elsewhere, an administrator's reset): svc's 401 speaks of a bearer
    // token, which a browser user never had, and this form cannot succeed any more. Back to signing in.
    if (errorCode(result) === 'unauthorized') {
      for (const input of [current, fresh, confirm]) input.value = '';
      showSignIn();
      return showError('Your session has ended. Sign in again.');
    }
    const field = errorCode(result) === 'wrong_password' ? current : null;
    return invalid(form, field, errorText(result));
  }
  for (const input of [current, fresh, confirm]) input.value = '';
  signedIn(result.data, 'Your password was changed.');
});

$('sign-out').addEventListener('click', async () => {
  // busy(), not the button's own disabled flag: it gives the focus back when the call fails (the section is not a
  // form, busy() takes any element holding controls).
  const result = await busy($('signed-in'), () => api('POST', '/auth/logout'));
  if (!result.ok) return showError(errorText(result));
  showSignIn('You are signed out.');
});

// Already signed in? Say so (no automatic redirect: someone signed in as the wrong user must be able to sign out).
const me = await api('GET', '/auth/me');
if (me.ok && me.data?.user) {
  if (me.data.mustChangePassword) showChangePassword(me.data);
  else showSignedIn(me.data);
} else {
  showSignIn();
}
