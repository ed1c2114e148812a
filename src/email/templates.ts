/**
 * The e-mails svc sends (SPEC 5.5): pure functions from their facts to a subject, a plain-text body and an HTML body.
 * Every interpolated value is HTML-escaped in the HTML part; links are passed in whole, built by the caller from
 * configuration (never from a request's Host header). Each paragraph and the subject stay on one line whatever the
 * values hold (oneLine).
 */

export interface RenderedEmail {
  subject: string;
  text: string;
  html: string;
}

const HTML_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => HTML_ESCAPES[c]!);
}

/**
 * Characters that end a line: CR, LF, VT, FF, NEL and the Unicode line and paragraph separators (U+2028, U+2029, which
 * names may hold and mail clients and browsers break lines at, UAX #14). In a name (an organization's, an
 * inviter's), one made lines of svc's own layout: `Acme\u2029\u2029Accept the invitation: https://evil.example/...`
 * read as a paragraph and a link of the e-mail above the real one, in the subject, the text and the HTML.
 */
const LINE_BREAKS = /[\r\n\v\f\u0085\u2028\u2029]+/g;

/** `text` with each run of line breaks as one space: a value cannot start a line or paragraph of its own. */
function oneLine(text: string): string {
  return text.replace(LINE_BREAKS, ' ');
}

/** One paragraph per entry; `link` renders as a button-like anchor with the URL repeated as text. */
type Block = { text: string } | { link: string; label: string };

function render(rawSubject: string, rawBlocks: Block[]): RenderedEmail {
  const subject = oneLine(rawSubject);
  const blocks = rawBlocks.map((b) => ('text' in b ? { text: oneLine(b.text) } : b));
  const text = blocks.map((b) => ('text' in b ? b.text : `${b.label}: ${b.link}`)).join('\n\n');
  const body = blocks
    .map((b) =>
      'text' in b
        ? `<p>${escapeHtml(b.text)}</p>`
        : `<p><a href="${escapeHtml(b.link)}">${escapeHtml(b.label)}</a></p><p style="font-size:12px;color:#555">${escapeHtml(b.link)}</p>`,
    )
    .join('\n');
  const html = `<!doctype html>\n<html><head><meta charset="utf-8"><title>${escapeHtml(subject)}</title></head>\n<body style="font-family:sans-serif;line-height:1.5">\n${body}\n</body></html>\n`;
  return { subject, text: `${text}\n`, html };
}

function dateOf(epochMs: number): string {
  return new Date(epochMs).toISOString().slice(0, 10);
}

export function inviteEmail(input: {
  orgName: string;
  inviterName: string | null;
  role: string;
  acceptUrl: string;
  expiresAt: number;
}): RenderedEmail {
  const who = input.inviterName ?? 'An administrator';
  return render(`You're invited to ${input.orgName} on svc`, [
    { text: `${who} invited you to join ${input.orgName} on svc as ${input.role === 'admin' || input.role === 'owner' ? 'an' : 'a'} ${input.role}.` },
    { link: input.acceptUrl, label: 'Accept the invitation' },
    { text: `The invitation expires on ${dateOf(input.expiresAt)} (UTC). If you did not expect it, ignore this e-mail.` },
  ]);
}

export function verifyEmail(input: { name: string; verifyUrl: string }): RenderedEmail {
  return render('Verify your e-mail address for svc', [
    { text: `Hello ${input.name},` },
    { text: 'Confirm that this is your e-mail address to finish setting up your svc account.' },
    { link: input.verifyUrl, label: 'Verify my e-mail address' },
    { text: 'The link works once and expires in 7 days. If you did not sign up, ignore this e-mail.' },
  ]);
}

export function passwordResetEmail(input: { name: string; resetUrl: string; expiresInMinutes: number }): RenderedEmail {
  return render('Reset your svc password', [
    { text: `Hello ${input.name},` },
    { text: 'Someone asked to reset the password of your svc account. If it was you, choose a new password here:' },
    { link: input.resetUrl, label: 'Choose a new password' },
    {
      text: `The link works once and expires in ${input.expiresInMinutes} minutes. If you did not ask for it, ignore this e-mail: your password stays as it is.`,
    },
  ]);
}
