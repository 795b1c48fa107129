import type { Language } from '../messages/catalog.js';

export type { Language };

/** Picks Japanese only when Accept-Language ranks `ja` above every English range (RFC 9110 q-values). */
export function preferredLanguage(acceptLanguage: string | null): Language {
  if (!acceptLanguage) return 'en';
  let best: { language: Language; q: number } = { language: 'en', q: 0 };
  for (const part of acceptLanguage.split(',').slice(0, 32)) {
    const [range = '', ...params] = part.toLowerCase().split(';');
    const primary = range.trim().split('-')[0];
    if (primary !== 'ja' && primary !== 'en') continue;
    const qParam = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
    const q = qParam ? Number(qParam.slice(2)) : 1;
    // Over 1 is malformed and ignored; 0 ("not acceptable") and a q that is not a number never beat the start.
    if (q > 1) continue;
    if (q > best.q) best = { language: primary, q };
  }
  return best.language;
}
