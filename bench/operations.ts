/** The operations the API bench measures, over HTTP (api-throughput.ts) and in one process (in-process.ts). */

export interface BenchedOperation {
  /** As the bench prints it. */
  name: string;
  /** The app's function that serves it. */
  functionName: string;
  method: 'GET' | 'POST';
  /** Under the API's base URL. */
  path: string;
  /** The route's parameters, as the host hands them to the function. */
  params: Record<string, string>;
  body?: string;
}

/** Reads first: creates grow the data the reads would otherwise measure. */
export function benchedOperations(projectId: string): BenchedOperation[] {
  return [
    { name: 'GET /api/projects/{id}', functionName: 'projects-get', method: 'GET', path: `/projects/${projectId}`, params: { projectId } },
    { name: 'GET /api/projects?limit=50', functionName: 'projects-list', method: 'GET', path: '/projects?limit=50', params: {} },
    { name: 'GET /api/tasks?projectId=…', functionName: 'tasks-list', method: 'GET', path: `/tasks?projectId=${projectId}`, params: {} },
    { name: 'POST /api/projects', functionName: 'projects-create', method: 'POST', path: '/projects', params: {}, body: JSON.stringify({ name: 'Load' }) },
  ];
}

/** The in-process bench's variants: the host's objects alone, and each operation's function and floor. */
export function inProcessVariants(operations: BenchedOperation[]): string[] {
  return ['host-objects', ...operations.flatMap(({ functionName }) => [functionName, `${functionName}.floor`])];
}
