/**
 * A line for the operator on standard error, where `svc serve` says what its log cannot (the log itself failing,
 * writes lost before the log exists, mail that could not be sent). Every such line starts `svc: ` so it reads apart from
 * the JSON log. A failed write is dropped: svc ignores stderr's errors (cli/program.ts), having nowhere else to say so.
 *
 * Standard error is the process's, unless a CLI run inside another process (runCli, cli/program.ts: the tests) has
 * sent the notes to the calling run's own stderr: svc's code below the CLI may not import the CLI, which sets the
 * destination instead. bin/svc never sets it: its notes go to process.stderr, as written, at once.
 */

/** Where a note is written: looked up at each note, so a destination that depends on the caller's run can say where. */
export type OperatorStderr = () => { write(text: string): unknown };

let operatorStderr: OperatorStderr = () => process.stderr;

/** Sends every note from now on to `destination`'s answer at the time of the note. */
export function sendOperatorNotesTo(destination: OperatorStderr): void {
  operatorStderr = destination;
}

/** `text` as it is, on the operator's standard error (the console mailer's e-mail, its own lines `svc: `-led). */
export function writeForOperator(text: string): void {
  operatorStderr().write(text);
}

export function noteForOperator(message: string): void {
  writeForOperator(`svc: ${message}\n`);
}
