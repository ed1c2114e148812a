/** The rule every e-mail address svc stores is held to: addresses given at signup, invitation, creation and start-up. */
import { z } from 'zod';
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
 * E-mail addresses: trimmed, at most 254 characters, one `@` with something on both sides, no control or invisible
 * characters, in Unicode normalization form NFKC: no two accepted addresses look alike but differ.
 */
export const emailField = z
  .string()
  .trim()
  .max(254)
  .regex(/^[^\s@]+@[^\s@]+$/, 'must be an e-mail address')
  .refine(isPrintableText, { message: UNPRINTABLE_MESSAGE })
  .refine(isNormalAddress, { message: 'must not hold invisible characters and must be in Unicode normalization form NFKC' });
