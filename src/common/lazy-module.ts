/**
 * A package loaded on first use instead of at start-up: for the heavy ones only a few requests need
 * (exceljs ~0.3 s and pdfkit ~0.1 s of a ~1.6 s start-up on this project's VM, nodemailer), so the
 * embedded default is ready sooner (issue 14). `load` is `() => require('<package>')` written at
 * the call site, so bundlers and readers still see which package it is.
 */
export function lazyModule<T>(load: () => unknown): () => T {
  let loaded: T | undefined;
  return () => (loaded ??= load() as T);
}
