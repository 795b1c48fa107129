import type { MessageKey } from '../messages/catalog.js';

/** How a rule refused, in the domain's terms: shared/http/error-mapper.ts gives each its status. */
export type Refusal = 'invalid' | 'notFound' | 'conflict' | 'contended' | 'stale' | 'keyReused';

/** A business rule refused what was asked; the message names which, in the caller's language. */
export class RuleError extends Error {
  constructor(
    readonly refusal: Refusal,
    readonly messageKey: MessageKey,
    readonly params: Record<string, string | number> = {},
    /** Fields the error body carries beside the message (the active job's id, say). */
    readonly extra?: Record<string, unknown>,
  ) {
    super(messageKey);
    this.name = 'RuleError';
  }
}

export const invalid = (key: MessageKey, params?: Record<string, string | number>) => new RuleError('invalid', key, params);
export const notFound = (key: MessageKey, params?: Record<string, string | number>) => new RuleError('notFound', key, params);
export const conflict = (key: MessageKey, params?: Record<string, string | number>) => new RuleError('conflict', key, params);
/** The version a conditional change expected is no longer the one stored. */
export const stale = () => new RuleError('stale', 'preconditionFailed');
