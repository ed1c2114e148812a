/** The rule every e-mail address svc stores is held to: addresses given at signup, invitation, creation and start-up. */
import { domainToASCII } from 'node:url';
import { z } from 'zod';
import { canonicalMailDomain, mailDomainOf } from '../core/mail-domain.ts';
import { isPrintableText, UNPRINTABLE_MESSAGE } from '../core/text.ts';

/**
 * Characters that show nothing (zero-width space and joiners, soft hyphen, direction marks, variation selectors,
 * fillers): an address holding one reads exactly like the address without it, yet is another account.
 */
const INVISIBLE = /\p{Default_Ignorable_Code_Point}/u;

/**
 * Whether an address is in its one Unicode form (NFKC): `vi\u0301ctor` and `víctor`, or a fullwidth `ａ` and `a`,
 * read alike but compare unequal, so each form would be an account of its own.
 */
function isNormalAddress(email: string): boolean {
  return !INVISIBLE.test(email) && email === email.normalize('NFKC');
}

/**
 * Whether the domain is written one way: a root dot (`acme.io.`), an empty label (`acme..io`, `.acme.io`) or an
 * ideographic full stop (`acme\u3002io`, a label separator to IDNA) is the same mail domain spelled otherwise, so
 * another account (and, at signup, another organization named `acme.io.`) for the same mailbox.
 */
function isPlainDomain(email: string): boolean {
  const domain = mailDomainOf(email);
  return !domain.includes('\u3002') && domain.split('.').every((label) => label !== '');
}

/**
 * Whether the local part is written without quoting: a quoted string is the atom it quotes and a quoted pair the
 * character it quotes (RFC 5322 3.2.4), so `"ceo"@acme.io` and `c\eo@acme.io` reach the mailbox of `ceo@acme.io`, each
 * an account of its own beside it. Browsers' own address check (HTML's valid e-mail address) allows neither.
 */
function isUnquotedLocalPart(email: string): boolean {
  return !/["\\]/.test(email.slice(0, email.lastIndexOf('@')));
}

/**
 * Whether the address names one mailbox: `,` and `;` separate addresses in a list, so `x,y@acme.io` reaches two where a
 * provider or a mail client splits it (an invitation to both). Browsers' own address check allows neither.
 */
function isOneMailbox(email: string): boolean {
  return !/[,;]/.test(email);
}

/**
 * Whether the domain has one Unicode form under IDNA (UTS 46), the form svc stores it in (src/core/mail-domain.ts):
 * `例え.jp` and `xn--r8jz45g.jp` are then one address. Invalid punycode (`xn--zz`), a label IDNA refuses, or a
 * spelling the conversion would turn into another domain has none, and would be an account of its own.
 */
function isConvertibleDomain(email: string): boolean {
  return canonicalMailDomain(mailDomainOf(email)) !== null;
}

/**
 * Whether the address, its domain in the ASCII form DNS and mail servers carry (`xn--...`), is at most 254 characters
 * (RFC 5321's path limit): each non-ASCII domain character takes several ASCII ones, so an address within the limit
 * as typed could be one no mail server takes. An address literal (`[192.0.2.1]`) is ASCII already.
 */
function fitsMailServers(email: string): boolean {
  const domain = mailDomainOf(email);
  return email.lastIndexOf('@') + 1 + (domainToASCII(domain) || domain).length <= 254;
}

/**
 * E-mail addresses: trimmed, at most 254 characters (also with the domain in its ASCII form), one `@` with something
 * on both sides, no control or invisible characters, in Unicode normalization form NFKC, the local part unquoted, one mailbox (no `,` or `;`), the
 * domain without empty labels and valid under IDNA (stored in its Unicode form by `normalizeEmail`): no two accepted
 * addresses look alike, or reach the same mailbox through another spelling of it, but differ.
 */
export const emailField = z
  .string()
  .trim()
  .max(254)
  .regex(/^[^\s@]+@[^\s@]+$/, 'must be an e-mail address')
  .refine(isPrintableText, { message: UNPRINTABLE_MESSAGE })
  .refine(isNormalAddress, { message: 'must not hold invisible characters and must be in Unicode normalization form NFKC' })
  .refine(isUnquotedLocalPart, { message: 'the local part must not be quoted or hold a backslash' })
  .refine(isOneMailbox, { message: 'must not hold a comma or a semicolon' })
  .refine(isPlainDomain, { message: 'the domain must not start or end with a dot, hold two dots in a row or an ideographic full stop' })
  .refine(isConvertibleDomain, { message: 'the domain must be a valid internationalized domain name (IDNA)' })
  .refine(fitsMailServers, { message: 'must be at most 254 characters with its domain in the ASCII form mail servers use (xn--...)' });
