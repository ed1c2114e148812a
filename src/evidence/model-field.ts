/** The `model` field every gateway wire validates alike, and the rule it follows for a name a run is listed by. */
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
 * A name a run is recorded, listed, filtered and attributed by (its model, an ingested run's provider): required,
 * trimmed, at most `max` characters, and none of NOT_IN_A_NAME, so that it reads as what it is and its filter finds it.
 */
export function runNameField(field: string, max: number) {
  return z
    .string()
    .trim()
    .min(1, `${field} is required`)
    .max(max)
    .refine((name) => !NOT_IN_A_NAME.test(name), { message: `${field} must not contain control characters, bidirectional overrides or invisible characters` });
}

/**
 * The `model` of a gateway request, on every wire (and an ingested prompt's `metadata.model`): at most
 * `RUN_MODEL_MAX_LENGTH` (256) characters, as many as the runs list's `model` filter takes.
 */
export const modelField = runNameField('model', RUN_MODEL_MAX_LENGTH);
