/** The `model` field every gateway wire validates alike. */
import { z } from 'zod';
import { isPrintableText, UNPRINTABLE_MESSAGE } from '../../core/text.ts';

/**
 * The `model` of a gateway request, on every wire: required, at most 256 characters, printable (a model named with
 * a NUL was recorded on its run cut short at it, unlike the name the upstream was sent).
 */
export const modelField = z
  .string()
  .trim()
  .min(1, 'model is required')
  .max(256)
  .refine(isPrintableText, { message: `model ${UNPRINTABLE_MESSAGE}` });
