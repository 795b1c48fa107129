/**
 * The functions an app registered: what `app.http`, `app.storageQueue` and the like hand to
 * `@azure/functions-core`, the module the Functions host supplies. The local host supplies its own
 * (local/functions-core, on NODE_PATH), and reads the registrations back from it.
 */
import { createRequire } from 'node:module';

export interface Registration {
  metadata: {
    name: string;
    bindings: Record<
      string,
      {
        name: string;
        type: string;
        direction: string;
        route?: string;
        methods?: string[];
        queueName?: string;
        connection?: string;
        schedule?: string;
        runOnStartup?: boolean;
      }
    >;
  };
  callback: (...args: unknown[]) => unknown;
}

export type Binding = Registration['metadata']['bindings'][string];

const require = createRequire(import.meta.url);

/** Every function registered so far. Resolved through NODE_PATH, so this is the very module instance `@azure/functions` registers with. */
export function registrations(): Registration[] {
  return (require('@azure/functions-core') as { registrations: Registration[] }).registrations;
}

/** Replaces each `%NAME%` with that app setting, as Azure resolves binding expressions. */
export function resolveBindingExpression(expression: string, environment: Record<string, string | undefined>): string {
  return expression.replace(/%([^%]+)%/g, (_, name: string) => {
    const value = environment[name]?.trim();
    if (!value) throw new Error(`'%${name}%' does not resolve to a value`);
    return value;
  });
}

/** The function's trigger binding of that type (`httpTrigger`, `queueTrigger`), if it has one. */
export function triggerOf(registration: Registration, type: string): Binding | undefined {
  return Object.values(registration.metadata.bindings).find((binding) => binding.type.toLowerCase() === type.toLowerCase());
}
