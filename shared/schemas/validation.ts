import { z } from 'zod';
import { badRequest, type ErrorDetail } from '../errors.js';
import type { MessageParams } from '../messages/types.js';
import { translate, type Language, type MessageKey } from '../messages/catalog.js';

const localeErrorMaps = { en: z.locales.en().localeError, ja: z.locales.ja().localeError };

/**
 * The formats whose failure zod words for a programmer (`Invalid string: must match pattern /…/`, `Invalid ISO date`):
 * worded here, in words a caller can act on. A pattern of our own says its form itself (`patterned`); one that does
 * not still never shows its regular expression.
 */
const FORMAT_MESSAGES: Partial<Record<string, MessageKey>> = { regex: 'invalidForm', date: 'calendarDate', datetime: 'dateTime' };

/** Our own checks carry a message key (and its parameters); everything else is worded by zod's locale for the caller's language. */
function errorMap(language: Language): z.core.$ZodErrorMap {
  return (issue) => {
    if (issue.code === 'custom' && issue.params?.messageKey) {
      const { messageKey, ...params } = issue.params as { messageKey: MessageKey } & MessageParams;
      return translate(messageKey, language, params);
    }
    const formatKey = issue.code === 'invalid_format' ? FORMAT_MESSAGES[issue.format] : undefined;
    return formatKey ? translate(formatKey, language) : localeErrorMaps[language](issue);
  };
}

/** Enough details to fix a request; a body with thousands of problems gets the first ones and a count. */
const MAX_DETAILS = 100;

function toDetails(issues: readonly z.core.$ZodIssue[], prefix: string, language: Language): ErrorDetail[] {
  const details = issues.flatMap((issue) => {
    const path = [prefix, ...issue.path.map(String)].filter(Boolean).join('.');
    // One short detail per unknown field, so that each can be pointed at by its path.
    if (issue.code === 'unrecognized_keys')
      return issue.keys.map((key) => ({
        path: [path, key].filter(Boolean).join('.'),
        message: translate('unknownField', language, { name: key.slice(0, 100) }),
      }));
    return [{ path, message: issue.message }];
  });
  if (details.length <= MAX_DETAILS) return details;
  return [...details.slice(0, MAX_DETAILS), { path: '', message: translate('moreProblems', language, { count: details.length - MAX_DETAILS }) }];
}

/** Parses input against a schema or throws a 400 listing every problem, worded in the caller's language. */
export function parseOrThrow<S extends z.ZodType>(schema: S, input: unknown, language: Language, prefix = ''): z.output<S> {
  // Valid input, the usual case, is parsed without the error map, which adds 3 to 5 µs to every parse in zod.
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  const worded = schema.safeParse(input, { error: errorMap(language) });
  throw badRequest('validationFailed', {}, toDetails((worded.error ?? result.error).issues, prefix, language));
}

// eslint-disable-next-line no-control-regex
const CONTROL_CHARACTERS = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/;
// eslint-disable-next-line no-control-regex
const CONTROL_CHARACTERS_OR_LINE_BREAKS = /[\u0000-\u001f\u007f]/;
/** Embeddings, overrides and isolates of the bidirectional algorithm: they make a name read as something else. */
const BIDIRECTIONAL_CONTROLS = /[\u202a-\u202e\u2066-\u2069]/;
/**
 * Nothing a reader would see: spaces, characters that are ignored when shown (zero-width space, soft hyphen, …),
 * and the Braille blank, a symbol drawn as nothing.
 */
const ONLY_INVISIBLE = /^[\p{White_Space}\p{Default_Ignorable_Code_Point}\u2800]+$/u;

/**
 * Trimmed, NFC-normalised text whose length counts characters (code points), so a Japanese or emoji
 * name has the same limit as a Latin one, and `Café` is one name whichever way it was typed. Lone
 * surrogates and control characters are refused; a single line (a name, a title, a search) may
 * hold no bidirectional controls and must show something.
 */
export function text(options: { min: number; max: number; multiline?: boolean }) {
  const forbidden = options.multiline ? CONTROL_CHARACTERS : CONTROL_CHARACTERS_OR_LINE_BREAKS;
  return (
    z
      .string()
      .trim()
      // A lone surrogate is refused below; normalising would replace it first.
      .overwrite((value) => (value.isWellFormed() ? value.normalize('NFC') : value))
      .check((ctx) => {
        const value = ctx.value;
        if (!value.isWellFormed()) {
          ctx.issues.push({ code: 'custom', input: value, params: { messageKey: 'notWellFormedText' } });
          return;
        }
        if (forbidden.test(value)) ctx.issues.push({ code: 'custom', input: value, params: { messageKey: 'noControlCharacters' } });
        if (!options.multiline && BIDIRECTIONAL_CONTROLS.test(value)) {
          ctx.issues.push({ code: 'custom', input: value, params: { messageKey: 'noBidirectionalControls' } });
        }
        if (!options.multiline && ONLY_INVISIBLE.test(value)) ctx.issues.push({ code: 'custom', input: value, params: { messageKey: 'nothingVisible' } });
        const length = [...value].length;
        if (length < options.min) ctx.issues.push({ code: 'too_small', origin: 'string', minimum: options.min, inclusive: true, input: value });
        if (length > options.max) ctx.issues.push({ code: 'too_big', origin: 'string', maximum: options.max, inclusive: true, input: value });
      })
      // The limits as the API description states them: JSON Schema, too, counts characters.
      .meta({ minLength: options.min, maxLength: options.max })
  );
}

/** An e-mail address, compared and stored in lower case. */
export const email = () =>
  z
    .email()
    .max(254)
    .transform((value) => value.toLowerCase());

/**
 * A string of the form `pattern` states, refused with the message `messageKey` words that form in
 * (`Must be an id such as PRJ-1001.`): a client never reads a regular expression. The API description
 * keeps the pattern.
 */
export function patterned(pattern: RegExp, messageKey: MessageKey, params: MessageParams = {}) {
  return z
    .string()
    .check((ctx) => {
      if (!pattern.test(ctx.value)) ctx.issues.push({ code: 'custom', input: ctx.value, params: { ...params, messageKey } });
    })
    .meta({ pattern: pattern.source });
}

const WHOLE_NUMBER = /^-?\d{1,12}$/;

/**
 * A whole number in a query string: digits only, so "1e9", "0x10" and " 5" are refused rather than
 * coerced. Whatever is wrong with it, the message says what it takes: a whole number from min to max.
 */
export function integerParameter(options: { min: number; max: number; default: number }) {
  const { min, max } = options;
  return z
    .string()
    .check((ctx) => {
      const value = WHOLE_NUMBER.test(ctx.value) ? Number(ctx.value) : Number.NaN;
      if (!(value >= min && value <= max)) ctx.issues.push({ code: 'custom', input: ctx.value, params: { messageKey: 'wholeNumberFrom', min, max } });
    })
    .transform(Number)
    .pipe(z.number().int().min(min).max(max))
    .optional()
    .transform((value) => value ?? options.default);
}

/**
 * An update body must change something: `{}` is refused rather than answered with an unchanged resource.
 * The API description states it as `minProperties: 1`.
 */
export function atLeastOneField<S extends z.ZodObject>(schema: S) {
  return schema
    .check((ctx) => {
      if (Object.keys(ctx.value).length === 0) ctx.issues.push({ code: 'custom', input: ctx.value, params: { messageKey: 'emptyUpdate' } });
    })
    .meta({ minProperties: 1 });
}
