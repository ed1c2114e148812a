/**
 * The one spelling of an e-mail address's domain. An internationalized domain has two: `例え.jp` as users type and read
 * it, `xn--r8jz45g.jp` (its ASCII, punycode form) as DNS and mail servers carry it; both reach one mailbox. svc stores
 * and compares the Unicode form (UTS 46 ToUnicode): it reads as the user typed it, an organization named after it at
 * signup reads so too, and the address may hold non-ASCII in its local part anyway, so the ASCII domain would not make
 * it an ASCII address. Whoever delivers the mail converts the domain to ASCII for the wire.
 */
import { domainToASCII, domainToUnicode } from 'node:url';

/**
 * Characters Node's conversion (the WHATWG host parser) reads as something else than a label's: it percent-decodes
 * (`a%41.com` is `aa.com`) and stops at a path, query or fragment (`例#x.jp` is `例`).
 */
const HOST_PARSER_SYNTAX = /[%/\\?#]/;
const ASCII_ONLY = /^[\x00-\x7f]*$/;

/** The domain of an e-mail address, lowercased: what follows its last `@` (the whole text when it has none). */
export function mailDomainOf(email: string): string {
  return email.slice(email.lastIndexOf('@') + 1).toLowerCase();
}

/**
 * The Unicode form of a (lowercased) mail domain, or null when it has none: invalid punycode (`xn--zz`), a label IDNA
 * refuses, or a conversion that changes the domain rather than its spelling: an ACE label that decodes to plain ASCII
 * (`xn--r8jz45g-.jp` reads back as `r8jz45g.jp`, another domain to DNS), a number the host parser reads as IPv4 parts
 * (`1.2.3` becomes `1.2.0.3`). An address literal (`[192.0.2.1]`) is no domain name and is returned as it is.
 */
export function canonicalMailDomain(domain: string): string | null {
  if (domain.startsWith('[') && domain.endsWith(']')) return domain;
  if (HOST_PARSER_SYNTAX.test(domain)) return null;
  const ascii = domainToASCII(domain);
  if (ascii === '') return null;
  const unicode = domainToUnicode(ascii);
  if (unicode === '' || domainToASCII(unicode) !== ascii) return null;
  // An ASCII label converts to itself (an ACE label included): any other outcome is the parser rewriting the domain.
  const labels = domain.split('.');
  const asciiLabels = ascii.split('.');
  if (labels.length !== asciiLabels.length) return null;
  if (labels.some((label, index) => ASCII_ONLY.test(label) && label !== asciiLabels[index])) return null;
  return unicode;
}

/**
 * An e-mail address as svc stores and compares it (SPEC 2.1): trimmed, lowercased, its domain in its Unicode form.
 * An address whose domain has no such form (never accepted since; perhaps stored before) is kept trimmed and
 * lowercased, so that it still finds itself.
 */
export function normalizeEmail(email: string): string {
  const lowered = email.trim().toLowerCase();
  const at = lowered.lastIndexOf('@');
  if (at < 0) return lowered;
  const domain = canonicalMailDomain(lowered.slice(at + 1));
  return domain === null ? lowered : `${lowered.slice(0, at + 1)}${domain}`;
}
