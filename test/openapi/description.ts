import SwaggerParser from '@apidevtools/swagger-parser';
import { z } from 'zod';
import { stack, type ApiResponse } from '../support/stack.js';

type Json = Record<string, any>;

export interface DocumentedOperation {
  method: string;
  /** The path template below the server URL, as the document writes it (`/projects/{projectId}`). */
  path: string;
  operation: Json;
}

const validators = new WeakMap<object, z.ZodType>();

/** Validates a value against a JSON Schema of the document, with zod's JSON Schema reader. */
export function schemaProblems(schema: Json, value: unknown): string[] {
  let validator = validators.get(schema);
  if (!validator) {
    validator = z.fromJSONSchema(schema);
    validators.set(schema, validator);
  }
  const result = validator.safeParse(value);
  return result.success ? [] : result.error.issues.map((issue) => `${issue.path.join('.') || '(body)'}: ${issue.message}`);
}

const essence = (contentType: string) => contentType.split(';')[0]!.trim().toLowerCase();

/** The API's description as it serves it, resolved for checking responses against it. */
export class ApiDescription {
  readonly operations: DocumentedOperation[];

  private constructor(
    readonly document: Json,
    readonly resolved: Json,
  ) {
    this.operations = Object.entries(resolved.paths as Record<string, Json>).flatMap(([path, item]) =>
      Object.entries(item).map(([method, operation]) => ({ method: method.toUpperCase(), path, operation: operation as Json })),
    );
  }

  static async served(): Promise<ApiDescription> {
    const document = (await (await fetch(`${stack.apiBaseUrl}/openapi.json`)).json()) as Json;
    return new ApiDescription(document, await SwaggerParser.dereference(structuredClone(document) as never));
  }

  /** The operation a request goes to: among the templates that match, the one with the fewest parameters. */
  find(method: string, requestPath: string): DocumentedOperation | undefined {
    const path = requestPath.split('?')[0]!;
    const parameters = (template: string) => (template.match(/\{/g) ?? []).length;
    return this.operations
      .filter((candidate) => candidate.method === method && new RegExp(`^${candidate.path.replaceAll('.', '\\.').replace(/\{\w+\}/g, '[^/]+')}$`).test(path))
      .sort((a, b) => parameters(a.path) - parameters(b.path))[0];
  }

  /** The methods of the operations at a path, as routing matches it (without regard to case or a trailing slash), in the document's order. */
  methodsAt(requestPath: string): string[] {
    const path = requestPath.split('?')[0]!.replace(/(?<=.)\/+$/, '');
    const matches = (template: string) => new RegExp(`^${template.replaceAll('.', '\\.').replace(/\{\w+\}/g, '[^/]+')}$`, 'i').test(path);
    return this.operations.filter((operation) => matches(operation.path)).map((operation) => operation.method);
  }

  /** What is wrong with a response according to the document: nothing when it conforms. */
  problems(method: string, requestPath: string, response: ApiResponse): string[] {
    const found = this.find(method, requestPath);
    // What no operation matches gets the catch-all's answer in the contract's error shape: a 405 naming the methods
    // of a path the API has, a 404 for any other.
    if (!found) {
      const where = `${method} ${requestPath} (no operation) → ${response.status}`;
      const allowed = this.methodsAt(requestPath).join(', ');
      const problems = [];
      if (allowed && response.status !== 405) problems.push(`${where} is not a 405, though the path takes ${allowed}`);
      if (allowed && response.headers.get('allow') !== allowed) problems.push(`${where} has Allow: ${response.headers.get('allow')}, not ${allowed}`);
      if (!allowed && response.status !== 404) problems.push(`${where} is not a 404`);
      // A HEAD's answer has no body.
      if (method === 'HEAD') return problems;
      return [...problems, ...schemaProblems(this.resolved.components.schemas.Error, response.body).map((problem) => `${where} body ${problem}`)];
    }
    const where = `${method} ${found.path} → ${response.status}`;
    const documented = found.operation.responses[String(response.status)] as Json | undefined;
    if (!documented) return [`${where} is not documented`];
    const problems: string[] = [];
    for (const [name, header] of Object.entries((documented.headers ?? {}) as Record<string, Json>)) {
      const value = response.headers.get(name);
      if (value === null) {
        if (header.required) problems.push(`${where} lacks the header ${name}`);
      } else {
        problems.push(...schemaProblems(header.schema, value).map((problem) => `${where} header ${name}: ${problem}`));
      }
    }
    const content = documented.content as Record<string, Json> | undefined;
    const hasBody = response.body !== '' && response.status !== 204 && response.status !== 304;
    if (!content || !hasBody) {
      if (content && !hasBody) problems.push(`${where} has no body`);
      if (!content && hasBody) problems.push(`${where} has a body the document does not describe`);
      return problems;
    }
    const contentType = essence(response.headers.get('content-type') ?? '');
    const mediaType = Object.entries(content).find(([type]) => essence(type) === contentType)?.[1];
    if (!mediaType) return [...problems, `${where} is ${contentType}, which the document does not list`];
    if (mediaType.schema && contentType === 'application/json')
      problems.push(...schemaProblems(mediaType.schema, response.body).map((problem) => `${where} body ${problem}`));
    return problems;
  }
}
