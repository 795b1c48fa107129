/**
 * @vercel/cosmosdb-server runs each query through @zeit/cosmosdb-query, which compiles SQL into
 * JavaScript that builds arrays with `reduce(($, x) => [...$, x], [])`: a copy of the whole array
 * per element, so every query is quadratic in the container's size (60,000 documents took
 * minutes). This rewrites those steps, in the compiled syntax tree, to push onto the accumulator
 * instead, and replaces the equally quadratic `stripUndefined` helper. Results are unchanged. The
 * queries then also take the shortcuts of local/cosmos-query-shortcuts.ts.
 */
import { createRequire } from 'node:module';
import { installQueryShortcuts } from './cosmos-query-shortcuts.js';

type Node = { type?: string; [key: string]: unknown };

const require = createRequire(import.meta.url);
const transformerModule = require('@zeit/cosmosdb-query/lib/transformer.js') as { default: (ast: unknown) => Node };
const helpers = require('@zeit/cosmosdb-query/lib/helpers.js') as { stripUndefined: (value: unknown) => unknown };

const isAccumulator = (node: unknown): boolean => (node as Node | undefined)?.type === 'Identifier' && (node as Node).name === '$';

/** `[...$, a, ...b]` → `($.push(a, ...b), $)`. */
function appendInPlace(node: Node): Node | undefined {
  const elements = node.elements as Node[] | undefined;
  if (node.type !== 'ArrayExpression' || !elements?.length) return undefined;
  const first = elements[0]!;
  if (first.type !== 'SpreadElement' || !isAccumulator(first.argument)) return undefined;
  const accumulator = { type: 'Identifier', name: '$' };
  const push = {
    type: 'CallExpression',
    callee: { type: 'MemberExpression', object: accumulator, property: { type: 'Identifier', name: 'push' }, computed: false },
    arguments: elements.slice(1),
  };
  return { type: 'SequenceExpression', expressions: [push, accumulator] };
}

function rewrite(node: unknown): void {
  if (!node || typeof node !== 'object') return;
  for (const [key, child] of Object.entries(node)) {
    if (Array.isArray(child)) {
      child.forEach((item, index) => {
        const replacement = item && typeof item === 'object' ? appendInPlace(item as Node) : undefined;
        if (replacement) child[index] = replacement;
        rewrite(child[index]);
      });
    } else if (child && typeof child === 'object') {
      const replacement = appendInPlace(child as Node);
      if (replacement) (node as Record<string, unknown>)[key] = replacement;
      rewrite((node as Record<string, unknown>)[key]);
    }
  }
}

function stripUndefined(value: unknown): unknown {
  if (Array.isArray(value)) {
    const result: unknown[] = [];
    for (const item of value) if (item !== undefined) result.push(stripUndefined(item));
    return result;
  }
  if (value && typeof value === 'object') {
    const result: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) if (item !== undefined) result[key] = stripUndefined(item);
    return result;
  }
  return value;
}

let applied = false;

export function speedUpEmulatorQueries(): void {
  if (applied) return;
  applied = true;
  const transform = transformerModule.default;
  transformerModule.default = (ast) => {
    const tree = transform(ast);
    rewrite(tree);
    return tree;
  };
  helpers.stripUndefined = stripUndefined;
  installQueryShortcuts();
}
