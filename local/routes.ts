/**
 * Route templates as the Functions host reads them (ASP.NET style): literal segments, `{name}`,
 * `{name:constraint}`, optional `{name?}` and catch-all `{*name}`. Literals match case-insensitively,
 * and when several templates match, the most specific wins: literal before parameter before catch-all.
 */
export interface CompiledRoute<T> {
  template: string;
  methods: string[];
  target: T;
  match(path: PathParts): Record<string, string> | undefined;
  /** Lower sorts first: one rank per segment, 0 literal, 1 parameter, 2 optional, 3 catch-all. */
  precedence: number[];
}

const CONSTRAINTS: Record<string, RegExp> = {
  int: /^-?\d+$/,
  long: /^-?\d+$/,
  guid: /^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$/i,
  alpha: /^[a-z]+$/i,
  bool: /^(true|false)$/i,
};

interface Segment {
  kind: 'literal' | 'parameter' | 'optional' | 'catchAll';
  value: string;
  constraint?: RegExp;
}

function parseSegment(segment: string): Segment {
  const parameter = /^\{(\*)?([A-Za-z_]\w*)(?::([a-z]+))?(\?)?\}$/.exec(segment);
  if (!parameter) {
    if (/[{}]/.test(segment)) throw new Error(`Unsupported route segment "${segment}"`);
    return { kind: 'literal', value: segment.toLowerCase() };
  }
  const [, star, name, constraintName, optional] = parameter;
  const constraint = constraintName ? CONSTRAINTS[constraintName] : undefined;
  if (constraintName && !constraint) throw new Error(`Unsupported route constraint "${constraintName}"`);
  return { kind: star ? 'catchAll' : optional ? 'optional' : 'parameter', value: name!, ...(constraint ? { constraint } : {}) };
}

function decode(part: string): string | undefined {
  try {
    return decodeURIComponent(part);
  } catch {
    return undefined;
  }
}

/**
 * A request path split once for every route to match against: each segment as sent, decoded
 * (undefined when it cannot be), and decoded in lower case for the literals.
 */
interface PathParts {
  raw: string[];
  decoded: (string | undefined)[];
  lowerCase: (string | undefined)[];
}

function pathParts(path: string): PathParts {
  const raw = path.split('/').filter(Boolean);
  const decoded = raw.map(decode);
  return { raw, decoded, lowerCase: decoded.map((part) => part?.toLowerCase()) };
}

const RANK: Record<Segment['kind'], number> = { literal: 0, parameter: 1, optional: 2, catchAll: 3 };

export function compileRoute<T>(template: string, methods: string[], target: T): CompiledRoute<T> {
  const segments = template.split('/').filter(Boolean).map(parseSegment);
  const takesAnyLength = segments.some((segment) => segment.kind === 'catchAll');
  return {
    template,
    methods: methods.map((method) => method.toUpperCase()),
    target,
    precedence: segments.map((segment) => RANK[segment.kind]),
    match({ raw, decoded, lowerCase }) {
      // Most routes fail on the length or a literal: the parameters are collected only once the whole path fits.
      if (raw.length > segments.length && !takesAnyLength) return undefined;
      for (let index = 0; index < segments.length; index++) {
        const segment = segments[index]!;
        if (segment.kind === 'catchAll') break;
        if (index >= raw.length) {
          if (segment.kind === 'optional' && index === segments.length - 1) break;
          return undefined;
        }
        if (decoded[index] === undefined) return undefined;
        if (segment.kind === 'literal' ? lowerCase[index] !== segment.value : segment.constraint && !segment.constraint.test(decoded[index]!)) return undefined;
      }
      const params: Record<string, string> = {};
      for (let index = 0; index < segments.length; index++) {
        const segment = segments[index]!;
        if (segment.kind === 'catchAll') {
          // The catch-all takes anything, undecodable segments too, so that every request gets an answer.
          params[segment.value] = raw
            .slice(index)
            .map((part, offset) => decoded[index + offset] ?? part)
            .join('/');
          return params;
        }
        if (index >= raw.length) break;
        if (segment.kind !== 'literal') params[segment.value] = decoded[index]!;
      }
      return params;
    },
  };
}

function comparePrecedence(a: number[], b: number[]): number {
  for (let index = 0; index < Math.max(a.length, b.length); index++) {
    const difference = (a[index] ?? -1) - (b[index] ?? -1);
    if (difference !== 0) return difference;
  }
  return 0;
}

/** Routes ordered most specific first, so the first that matches path and method is the one to run. */
export function createRouter<T>(routes: CompiledRoute<T>[]) {
  const ordered = [...routes].sort((a, b) => comparePrecedence(a.precedence, b.precedence));
  return {
    routes: ordered,
    find(method: string, path: string): { route: CompiledRoute<T>; params: Record<string, string> } | undefined {
      const upperMethod = method.toUpperCase();
      const parts = pathParts(path);
      for (const route of ordered) {
        if (!route.methods.includes(upperMethod)) continue;
        const params = route.match(parts);
        if (params) return { route, params };
      }
      return undefined;
    },
  };
}
