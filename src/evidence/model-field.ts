/** The `model` field every gateway wire validates alike, and the rule it follows for a name a run is listed by. */
import { z } from 'zod';
import { isPrintableAndVisible, UNPRINTABLE_OR_INVISIBLE_MESSAGE } from '../core/text.ts';
import { RUN_MODEL_MAX_LENGTH } from './types.ts';

/**
 * A name a run is recorded, listed, filtered and attributed by (its model, an ingested run's provider): required,
 * trimmed, at most `max` characters, and printable without a character that shows nothing (src/core/text.ts): a NUL cut
 * the name short on its run, unlike the name the upstream was sent, and `gpt\u200b-4o` read exactly like `gpt-4o` in
 * the runs list, its filter and the TUI. Only input is held to it: the runs list's filters take any text, so a run
 * recorded before a character was refused is still found by its name.
 */
export function runNameField(field: string, max: number) {
  return z
    .string()
    .trim()
    .min(1, `${field} is required`)
    .max(max)
    .refine(isPrintableAndVisible, { message: `${field} ${UNPRINTABLE_OR_INVISIBLE_MESSAGE}` });
}

/**
 * The `model` of a gateway request, on every wire (and an ingested prompt's `metadata.model`): at most
 * `RUN_MODEL_MAX_LENGTH` (256) characters, as many as the runs list's `model` filter takes.
 */
export const modelField = runNameField('model', RUN_MODEL_MAX_LENGTH);
