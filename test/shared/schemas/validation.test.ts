import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ApiError } from '../../../shared/errors.js';
import { translate, type MessageKey } from '../../../shared/messages/catalog.js';
import { createWebhookBody, updateWebhookBody } from '../../../shared/schemas/webhooks.js';
import { atLeastOneField, email, integerParameter, parseOrThrow, patterned, text } from '../../../shared/schemas/validation.js';

function problems(schema: z.ZodType, input: unknown, language: 'en' | 'ja' = 'en') {
  try {
    parseOrThrow(schema, input, language);
  } catch (error) {
    return (error as ApiError).options.details;
  }
  return undefined;
}

describe('text', () => {
  const name = text({ min: 1, max: 3 });

  it('trims and counts characters rather than UTF-16 units', () => {
    expect(name.parse('  ab ')).toBe('ab');
    expect(name.parse('😀😀😀')).toBe('😀😀😀');
    expect(name.safeParse('😀😀😀😀').success).toBe(false);
    expect(name.safeParse('   ').success).toBe(false);
  });

  it('refuses control characters, and line breaks unless multiline', () => {
    expect(name.safeParse('a\u0000').success).toBe(false);
    expect(name.safeParse('a\nb').success).toBe(false);
    expect(text({ min: 0, max: 10, multiline: true }).parse('a\nb\tc')).toBe('a\nb\tc');
  });

  it('refuses lone surrogates', () => {
    expect(problems(z.object({ name }), { name: 'a\ud800' })).toEqual([{ path: 'name', message: 'Must be well-formed Unicode text.' }]);
  });
});

describe('text: what each refusal says', () => {
  const title = z.object({ title: text({ min: 1, max: 10 }) });
  const notes = z.object({ notes: text({ min: 0, max: 10, multiline: true }) });

  it.each<[string, MessageKey]>([
    ['a\u0000b', 'noControlCharacters'],
    ['a\nb', 'noControlCharacters'],
    ['a\u202eb', 'noBidirectionalControls'],
    ['\u2066a', 'noBidirectionalControls'],
    ['\u200b\u00ad', 'nothingVisible'],
    ['\u2800 \u3164', 'nothingVisible'],
  ])('%j in a single line of text: %s, in English and in Japanese', (value, key) => {
    for (const language of ['en', 'ja'] as const) {
      expect(problems(title, { title: value }, language)).toEqual([{ path: 'title', message: translate(key, language) }]);
    }
  });

  it('words a length out of bounds as zod words its own, counting characters', () => {
    const zods = z.object({ title: z.string().min(1).max(10) });
    for (const language of ['en', 'ja'] as const) {
      expect(problems(title, { title: '😀'.repeat(11) }, language)).toEqual(problems(zods, { title: 'x'.repeat(11) }, language));
      expect(problems(title, { title: '' }, language)).toEqual(problems(zods, { title: '' }, language));
    }
  });

  it('takes text with an invisible character beside visible ones, and states its limits to the API description', () => {
    expect(parseOrThrow(title, { title: 'a\u200b' }, 'en')).toEqual({ title: 'a\u200b' });
    expect(z.toJSONSchema(text({ min: 2, max: 7 }))).toMatchObject({ type: 'string', minLength: 2, maxLength: 7 });
  });

  it('lets multiline text hold line breaks, tabs and bidirectional controls, and show nothing, but no other control character', () => {
    for (const value of ['a\nb\r\n\tc', 'a\u202eb', '\u200b']) expect(parseOrThrow(notes, { notes: value }, 'en')).toEqual({ notes: value });
    expect(problems(notes, { notes: 'a\u0007' })).toEqual([{ path: 'notes', message: translate('noControlCharacters', 'en') }]);
  });
});

describe('parseOrThrow', () => {
  const schema = z.strictObject({ name: text({ min: 1, max: 5 }), owner: email().optional() });

  it('throws a 400 with one detail per problem and per unknown field', () => {
    const details = problems(schema, { name: 'toolong', owner: 'x', one: 1, two: 2 });
    expect(details?.map((detail) => detail.path)).toEqual(['name', 'owner', 'one', 'two']);
  });

  it('names an unknown field by its first 100 characters, and its path in full', () => {
    const long = 'k'.repeat(150);
    expect(problems(schema, { name: 'a', [long]: 1 })).toEqual([{ path: long, message: translate('unknownField', 'en', { name: 'k'.repeat(100) }) }]);
  });

  it('lists at most 100 problems, then how many more there are', () => {
    const unknown = (count: number) => Object.fromEntries(Array.from({ length: count }, (_, index) => [`field${index}`, index]));
    const hundred = problems(schema, { name: 'a', ...unknown(100) })!;
    expect(hundred).toHaveLength(100);
    expect(hundred.at(-1)).toEqual({ path: 'field99', message: translate('unknownField', 'en', { name: 'field99' }) });
    const many = problems(schema, { name: 'a', ...unknown(150) })!;
    expect(many).toHaveLength(101);
    expect(many[99]!.path).toBe('field99');
    expect(many[100]).toEqual({ path: '', message: translate('moreProblems', 'en', { count: 50 }) });
  });

  it('refuses an update that changes nothing, and takes one that changes a field', () => {
    expect(problems(updateWebhookBody, {})).toEqual([{ path: '', message: translate('emptyUpdate', 'en') }]);
    expect(parseOrThrow(updateWebhookBody, { description: 'x' }, 'en')).toEqual({ description: 'x' });
  });

  it('words the details in Japanese on request', () => {
    const [detail] = problems(schema, { name: '' }, 'ja') ?? [];
    expect(detail?.message).toMatch(/[\u3040-\u30ff\u4e00-\u9fff]/);
  });

  it('lower-cases e-mail addresses', () => {
    expect(parseOrThrow(schema, { name: 'a', owner: 'Kim@Contoso.TEST' }, 'en')).toEqual({ name: 'a', owner: 'kim@contoso.test' });
  });
});

describe('integerParameter', () => {
  const limit = z.object({ limit: integerParameter({ min: 1, max: 200, default: 50 }) });

  it('defaults, and takes plain digits within range, the bounds included', () => {
    expect(limit.parse({}).limit).toBe(50);
    expect(limit.parse({ limit: '1' }).limit).toBe(1);
    expect(limit.parse({ limit: '200' }).limit).toBe(200);
  });

  it.each(['0', '201', '-1', 'abc', '1e9', '0x10', ' 5', '5 ', '1.5', '', '2000000000000'])('refuses %j, saying what it takes, in one detail', (value) => {
    for (const language of ['en', 'ja'] as const) {
      expect(problems(limit, { limit: value }, language)).toEqual([{ path: 'limit', message: translate('wholeNumberFrom', language, { min: 1, max: 200 }) }]);
    }
  });

  it('takes a negative whole number where its range does', () => {
    expect(z.object({ offset: integerParameter({ min: -5, max: 5, default: 0 }) }).parse({ offset: '-5' })).toEqual({ offset: -5 });
  });
});

describe('patterned', () => {
  const schema = z.object({ id: patterned(/^PRJ-[1-9]\d{0,3}$/, 'idForm', { example: 'PRJ-1001' }) });

  it('takes a value of its form, and refuses another with its message and parameters, never the pattern', () => {
    expect(parseOrThrow(schema, { id: 'PRJ-12' }, 'en')).toEqual({ id: 'PRJ-12' });
    for (const language of ['en', 'ja'] as const) {
      expect(problems(schema, { id: 'PRJ-0' }, language)).toEqual([{ path: 'id', message: translate('idForm', language, { example: 'PRJ-1001' }) }]);
    }
  });

  it('keeps its pattern for the API description', () => {
    expect(z.toJSONSchema(schema.shape.id)).toMatchObject({ type: 'string', pattern: '^PRJ-[1-9]\\d{0,3}$' });
  });
});

describe('a format zod words for a programmer', () => {
  it.each<[string, z.ZodType, unknown, MessageKey]>([
    ['a pattern of zod', z.string().regex(/^a+$/), 'b', 'invalidForm'],
    ['a calendar date', z.iso.date(), '2026-02-30', 'calendarDate'],
    ['a date and time', z.iso.datetime({ offset: true }), '2026-12-06 12:00', 'dateTime'],
  ])('is worded by us: %s', (_name, schema, value, key) => {
    for (const language of ['en', 'ja'] as const) {
      expect(problems(z.object({ value: schema }), { value }, language)).toEqual([{ path: 'value', message: translate(key, language) }]);
    }
  });

  it("that a caller can read is left in zod's words, in the caller's language", () => {
    const schema = z.object({ owner: email() });
    for (const language of ['en', 'ja'] as const) {
      const message = z.email().safeParse('x', { error: z.locales[language]().localeError }).error!.issues[0]!.message;
      expect(problems(schema, { owner: 'x' }, language)).toEqual([{ path: 'owner', message }]);
    }
  });
});

describe('atLeastOneField', () => {
  it('states to the API description that an update holds a field', () => {
    expect(z.toJSONSchema(atLeastOneField(z.object({ name: z.string().optional() })))).toMatchObject({ type: 'object', minProperties: 1 });
  });
});

describe('webhook events', () => {
  const url = 'https://8.8.8.8/hook';

  it('refuse webhook.ping saying that it is sent on request, not subscribed to, in English and Japanese', () => {
    for (const schema of [createWebhookBody, updateWebhookBody]) {
      expect(problems(schema, { url, events: ['project.created', 'webhook.ping'] })).toEqual([
        {
          path: 'events.1',
          message: '"webhook.ping" cannot be subscribed to: it is sent on request, by POST /api/webhooks/{webhookId}/ping, to that subscription only.',
        },
      ]);
      expect(problems(schema, { url, events: ['webhook.ping'] }, 'ja')![0]!.message).toMatch(/^「webhook.ping」は購読できません。/);
    }
  });

  it('name the subscribable events, without webhook.ping, for an unknown one', () => {
    const [unknown] = problems(createWebhookBody, { url, events: ['project.exploded'] })!;
    expect(unknown).toMatchObject({ path: 'events.0', message: expect.stringContaining('"project.created"') });
    expect(unknown!.message).not.toContain('webhook.ping');
    expect(createWebhookBody.parse({ url, events: ['task.created', 'task.created', 'rag.job.failed'] }).events).toEqual(['task.created', 'rag.job.failed']);
  });
});
