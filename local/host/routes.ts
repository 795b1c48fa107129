/**
 * Route templates as the Functions host reads them (ASP.NET's `{name}`, `{name:constraint}`, `{name?}`,
 * `{*name}`), matched by find-my-way with ASP.NET's precedence: literal, then parameter, then catch-all.
 */
import FindMyWay, { type HTTPMethod } from 'find-my-way';

export interface Route<T> {
  template: string;
  methods: string[];
  target: T;
}

// ASP.NET's inline constraints, as find-my-way's parameter patterns.
const CONSTRAINTS: Record<string, string> = {
  int: '^-?\\d+$',
  long: '^-?\\d+$',
  guid: '^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$',
  alpha: '^[a-zA-Z]+$',
  bool: '^(?:[tT][rR][uU][eE]|[fF][aA][lL][sS][eE])$',
};

/** A template's path for find-my-way, and the name of its catch-all (find-my-way calls it `*`). */
function findMyWayPath(template: string): { path: string; catchAll?: string } {
  let catchAll: string | undefined;
  const segments = template
    .split('/')
    .filter(Boolean)
    .map((segment) => {
      const parameter = /^\{(\*)?([A-Za-z_]\w*)(?::([a-z]+))?(\?)?\}$/.exec(segment);
      if (!parameter) {
        if (/[{}]/.test(segment)) throw new Error(`Unsupported route segment "${segment}"`);
        return segment.replace(/:/g, '::');
      }
      const [, star, name, constraint, optional] = parameter;
      if (star) return ((catchAll = name), '*');
      if (constraint && !CONSTRAINTS[constraint]) throw new Error(`Unsupported route constraint "${constraint}"`);
      return `:${name}${constraint ? `(${CONSTRAINTS[constraint]})` : ''}${optional ?? ''}`;
    });
  return { path: `/${segments.join('/')}`, ...(catchAll ? { catchAll } : {}) };
}

/** A segment that cannot be percent-decoded reaches the function as sent, as Kestrel leaves it: its `%` escaped, find-my-way matches it. */
function undecodableEscaped(segment: string): string {
  try {
    decodeURIComponent(segment);
    return segment;
  } catch {
    return segment.replace(/%/g, '%25');
  }
}

export function createRouter<T>(routes: Route<T>[]) {
  // maxParamLength: ids are refused by the app, with the contract's 404, not by the router.
  const router = FindMyWay({ caseSensitive: false, ignoreTrailingSlash: true, ignoreDuplicateSlashes: true, maxParamLength: 64 * 1024 });
  const parsed = routes.map((route) => ({ route, methods: route.methods.map((name) => name.toUpperCase() as HTTPMethod), ...findMyWayPath(route.template) }));
  for (const { route, path, catchAll, methods } of parsed) router.on(methods, path, () => undefined, { route, catchAll });
  // ASP.NET's catch-all also matches an empty rest (`api/{*path}` takes `/api` and `/api/`, without the parameter),
  // after any other route of that path and method: so it is registered there last, where none is.
  for (const { route, path, catchAll, methods } of parsed.filter((each) => each.catchAll))
    for (const method of methods) if (!router.hasRoute(method, path.slice(0, -1))) router.on(method, path.slice(0, -1), () => undefined, { route, catchAll });
  return {
    routes,
    find(method: string, path: string): { route: Route<T>; params: Record<string, string> } | undefined {
      const upperMethod = method.toUpperCase() as HTTPMethod;
      const found = router.find(upperMethod, path) ?? router.find(upperMethod, path.split('/').map(undecodableEscaped).join('/'));
      if (!found) return undefined;
      const { route, catchAll } = found.store as { route: Route<T>; catchAll?: string };
      const { '*': rest, ...params } = found.params as Record<string, string | undefined>;
      return { route, params: { ...(params as Record<string, string>), ...(catchAll && rest ? { [catchAll]: rest } : {}) } };
    },
  };
}
