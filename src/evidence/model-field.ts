/** The `model` field every gateway wire validates alike. */
import { z } from 'zod';
import { isPrintableText, UNPRINTABLE_MESSAGE } from '../core/text.ts';
import { RUN_MODEL_MAX_LENGTH } from './types.ts';

/**
 * The `model` of a gateway request, on every wire: required, at most `RUN_MODEL_MAX_LENGTH` (256) characters, as
 * many as the runs list's `model` filter takes, printable (a model named with a NUL was recorded on its run cut
 * short at it, unlike the name the upstream was sent).
 */
export const modelField = z
  .string()
  .trim()
  .min(1, 'model is required')
  .max(RUN_MODEL_MAX_LENGTH)
  .refine(isPrintableText, { message: `model ${UNPRINTABLE_MESSAGE}` });
