/** An InvocationContext as the worker gives one, that keeps every line logged through it for the test to read. */
import functions from '@azure/functions';

const { InvocationContext } = functions;

export function loggedInvocation(invocationId: string, functionName = 'projects-get') {
  const lines: { level: string; text: string }[] = [];
  const invocation = new InvocationContext({
    invocationId,
    functionName,
    logHandler: (level, ...args) => lines.push({ level, text: args.map(String).join(' ') }),
  });
  return { invocation, lines };
}
