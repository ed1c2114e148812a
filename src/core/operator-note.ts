/**
 * A line for the operator on standard error, where `svc serve` says what its log cannot (the log itself failing,
 * writes lost before the log exists, mail that could not be sent). Every such line starts `svc: ` so it reads apart from
 * the JSON log. A failed write is dropped: svc ignores stderr's errors (cli/program.ts), having nowhere else to say so.
 */
export function noteForOperator(message: string): void {
  process.stderr.write(`svc: ${message}\n`);
}
