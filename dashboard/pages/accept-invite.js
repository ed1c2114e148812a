// /accept-invite?token=...: looks the invitation up (GET /api/v1/invites/:token), then either creates the account
// (new address: name + password) or accepts for the signed-in account (existing address: POST with no body).
//
// The token leaves the address bar at once. It is kept in this tab's sessionStorage, never in a URL, so that the
// round trip through /login?next=/accept-invite (an existing account signing in first) comes back to the same
// invitation; it is removed again once the invitation is accepted or found unusable. sessionStorage belongs to this
// tab only and ends with it.
import { $, api, busy, checkNewPassword, errorCode, errorText, invalid, isTokenShaped, showError, showOnly, showStatus, takeToken } from './common.js';

const STORAGE_KEY = 'svc.inviteToken';

const REASONS = {
  invalid: 'This invitation link is not valid. Check that the whole link was opened, or ask for a new invitation.',
  expired: 'This invitation has expired. Ask an administrator of the organization to invite you again.',
  revoked: 'This invitation was withdrawn. Ask an administrator of the organization for a new one.',
  accepted: 'This invitation has already been accepted. Sign in to continue.',
};

function rememberToken(token) {
  try {
    if (token) sessionStorage.setItem(STORAGE_KEY, token);
    else sessionStorage.removeItem(STORAGE_KEY);
  } catch {
    // Storage disabled: the page still works, only the sign-in round trip needs the link again.
  }
}

function storedToken() {
  try {
    return sessionStorage.getItem(STORAGE_KEY);
  } catch {
    return null;
  }
}

function unusable(status) {
  rememberToken(null);
  $('title').textContent = 'This invitation cannot be used';
  showOnly(...($('invite-org').textContent ? ['invite'] : []));
  showError(REASONS[status] ?? REASONS.invalid);
}

function joined(me, orgName) {
  rememberToken(null);
  $('title').textContent = 'Welcome';
  $('done-text').textContent = `You joined ${me?.org?.name ?? orgName}.`;
  showOnly('done');
  showStatus('');
  showError('');
}

/** The address of the signed-in user, or null. */
async function signedInEmail() {
  const me = await api('GET', '/auth/me');
  return me.ok ? (me.data?.user?.email ?? null) : null;
}

/**
 * What an existing account must do, for whoever is signed in (`signedInAs`, or null): nothing more for the invitee,
 * else sign in as the invited address (the link to /login). Said again when svc refuses the acceptance for want of
 * the invitee's session, for whoever is signed in by then: nobody (the session ended after the page loaded), or
 * another user, who must still be told to sign out first.
 */
function showSignInHint(email, signedInAs) {
  const isInvitee = Boolean(signedInAs) && signedInAs.toLowerCase() === email.toLowerCase();
  $('sign-in-hint').hidden = isInvitee;
  $('existing-explain').textContent = isInvitee
    ? `You are signed in as ${signedInAs}.`
    : signedInAs
      ? `There is already an account for ${email}, but you are signed in as ${signedInAs}. Sign out, then sign in as ${email}.`
      : `There is already an account for ${email}. Sign in with it first.`;
}

async function main() {
  const token = takeToken() ?? storedToken();
  rememberToken(token);
  if (!token) {
    $('title').textContent = 'No invitation';
    showStatus('');
    return showError('This page needs the link from your invitation e-mail. Open that link again.');
  }
  if (!isTokenShaped(token)) return unusable('invalid');

  const lookup = await api('GET', `/invites/${encodeURIComponent(token)}`);
  if (!lookup.ok) {
    showStatus('');
    return showError(errorText(lookup));
  }
  const invite = lookup.data;
  if (invite.orgName) {
    $('invite-org').textContent = invite.orgName;
    $('invite-email').textContent = invite.email;
    $('invite-role').textContent = invite.role;
    $('invite-summary').textContent = `You are invited to join ${invite.orgName} on svc.`;
    $('title').textContent = `Join ${invite.orgName}`;
  }
  showStatus('');
  if (!invite.valid) return unusable(invite.status);

  const accept = async (form, body) => {
    const result = await busy(form, () => api('POST', `/invites/${encodeURIComponent(token)}/accept`, body));
    if (result.ok) return joined(result.data, invite.orgName);
    if (errorCode(result) === 'invalid_token') return unusable(result.data.error.details?.status);
    if (errorCode(result) === 'sign_in_required') showSignInHint(invite.email, await signedInEmail());
    return invalid(form, null, errorText(result));
  };

  if (!invite.userExists) {
    showOnly('invite', 'new-account');
    $('new-account-username').value = invite.email;
    const form = $('new-account');
    form.addEventListener('submit', async (event) => {
      event.preventDefault();
      const name = $('name');
      if (!name.value.trim()) return invalid(form, name, 'Enter your name.');
      if (!checkNewPassword(form, $('password'), $('confirm'))) return;
      await accept(form, { name: name.value.trim(), password: $('password').value });
    });
    return $('name').focus();
  }

  // An account exists for the address: acceptance needs a session as that user (403 sign_in_required otherwise).
  $('existing-email').textContent = invite.email;
  showSignInHint(invite.email, await signedInEmail());
  showOnly('invite', 'existing-account');
  const form = $('existing-account');
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    await accept(form, undefined);
  });
}

await main();
