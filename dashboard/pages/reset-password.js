// /reset-password: without a token, asks for the e-mail address (POST /api/v1/auth/password-reset/request, always
// 202 with the same neutral message); with ?token=... (taken out of the address bar at once and kept in memory
// only: a reload shows the request form again), sets a new password (POST .../password-reset/confirm).
import { $, api, busy, checkNewPassword, errorCode, errorText, invalid, showError, showOnly, showStatus, takeToken } from './common.js';

const token = takeToken();

if (token) {
  $('title').textContent = 'Choose a new password';
  showOnly('confirm-form');
  $('password').focus();
} else {
  showOnly('request');
}

$('request').addEventListener('submit', async (event) => {
  event.preventDefault();
  const form = event.currentTarget;
  const email = $('email');
  if (!email.value.trim() || !email.value.includes('@')) return invalid(form, email, 'Enter the e-mail address of your account.');
  invalid(form, null, '');
  showStatus('Sending…');
  const result = await busy(form, () => api('POST', '/auth/password-reset/request', { email: email.value.trim() }));
  if (!result.ok) {
    showStatus('');
    return invalid(form, null, errorText(result));
  }
  $('requested-text').textContent = result.data?.message ?? 'If an account exists for that address, a reset link is on its way.';
  $('title').textContent = 'Check your e-mail';
  showOnly('requested');
  showStatus('');
});

$('confirm-form').addEventListener('submit', async (event) => {
  event.preventDefault();
  const form = event.currentTarget;
  if (!checkNewPassword(form, $('password'), $('confirm'))) return;
  const result = await busy(form, () => api('POST', '/auth/password-reset/confirm', { token, password: $('password').value }));
  if (result.ok) {
    $('password').value = '';
    $('confirm').value = '';
    $('title').textContent = 'Password changed';
    showOnly('done');
    return showStatus('');
  }
  if (errorCode(result) === 'invalid_token') {
    $('title').textContent = 'This reset link cannot be used';
    showOnly('expired');
    return showError('This reset link is not valid any more: it expired (links last one hour), was already used, or was replaced by a newer one.');
  }
  return invalid(form, null, errorText(result));
});
