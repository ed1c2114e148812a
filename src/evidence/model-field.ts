/** The `model` field every gateway wire validates alike. */
import { z } from 'zod';
import { RUN_MODEL_MAX_LENGTH } from './types.ts';

/**
 * What a model's name may not hold: control characters (a NUL cut the name short on its run, unlike the name the
 * upstream was sent), bidirectional overrides, and characters that show nothing (zero-width spaces and joiners, a BOM,
 * variation selectors: `gpt\u200b-4o` read exactly like `gpt-4o` in the runs list, its filter and the TUI). One
 * character class, so the check is one pass over the name.
 */
const NOT_IN_A_NAME = /[\p{Cc}\p{Default_Ignorable_Code_Point}\u202A-\u202E\u2066-\u2069]/u;

/**
 * The `model` of a gateway request, on every wire (and an ingested prompt's `metadata.model`): required, at most
 * `RUN_MODEL_MAX_LENGTH` (256) characters, as many as the runs list's `model` filter takes, and none of NOT_IN_A_NAME.
 */
export const modelField = z
  .string()
  .trim()
  .min(1, 'model is required')
  .max(RUN_MODEL_MAX_LENGTH)
  .refine((model) => !NOT_IN_A_NAME.test(model), { message: 'model must not contain control characters, bidirectional overrides or invisible characters' });
