/**
 * The name of the organization a signup creates (SPEC 4.5): the e-mail's domain, or `{name}'s org` for an address at
 * a generic mail provider, where the domain says nothing about the organization.
 */
import { mailDomainOf } from '../core/mail-domain.ts';

const GENERIC_PROVIDERS = new Set([
  '163.com', '126.com', 'aol.com', 'fastmail.com', 'fastmail.fm', 'gmail.com', 'gmx.com', 'gmx.de', 'gmx.net',
  'googlemail.com', 'hey.com', 'hotmail.com', 'hotmail.co.uk', 'hotmail.fr', 'icloud.com', 'live.com', 'mac.com',
  'mail.com', 'mail.ru', 'me.com', 'msn.com', 'naver.com', 'outlook.com', 'pm.me', 'proton.me', 'protonmail.com',
  'qq.com', 'rediffmail.com', 'tutanota.com', 'web.de', 'yahoo.com', 'yahoo.co.jp', 'yahoo.co.uk', 'yahoo.fr',
  'yandex.com', 'yandex.ru', 'ymail.com', 'zoho.com',
]);

export function isGenericProvider(domain: string): boolean {
  return GENERIC_PROVIDERS.has(domain.toLowerCase());
}

/**
 * `ada@acme.io` -> `acme.io`; `ada@gmail.com` with name `Ada` -> `Ada's org`. At most 100 characters (UTF-16 units, as
 * the organization name rule counts them), never cutting a character in two: a cut between the halves of a surrogate
 * pair left half an emoji, stored as replacement characters past the 100.
 */
export function orgNameForSignup(email: string, name: string): string {
  const domain = mailDomainOf(email);
  const chosen = domain && !isGenericProvider(domain) ? domain : `${name.trim()}'s org`;
  if (chosen.length <= 100) return chosen;
  const cut = /[\uD800-\uDBFF]/.test(chosen[99]!) ? 99 : 100;
  return chosen.slice(0, cut);
}
