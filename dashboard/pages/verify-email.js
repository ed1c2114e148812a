// /verify-email?token=...: verifies the address on load (GET /api/v1/auth/verify/:token, single use) and says so.
// The token leaves the address bar first, so a reload does not spend a request on a used token.
import { $, api, errorCode, errorText, isTokenShaped, showError, showStatus, takeToken } from './common.js';

const token = takeToken();
if (!token) {
  $('title').textContent = 'No verification link';
  showStatus('');
  showError('This page needs the link from your verification e-mail. Open that link again.');
} else {
  // A token of another shape is no link svc sent: refused like an unknown one, without a call (isTokenShaped says why).
  const result = isTokenShaped(token) ? await api('GET', `/auth/verify/${encodeURIComponent(token)}`) : null;
  if (result?.ok) {
    $('title').textContent = 'E-mail verified';
    showStatus(`Your e-mail ${result.data.email} is verified.`);
  } else {
    $('title').textContent = 'Not verified';
    showError(
      !result || errorCode(result) === 'invalid_token'
        ? 'This verification link is not valid any more: it was already used, expired, or was replaced by a newer one. Sign in to ask for a new one.'
        : errorText(result),
    );
  }
}
