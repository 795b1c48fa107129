/**
 * The Python client's types, generated from the OpenAPI document as openapi-typescript generates the
 * TypeScript client's: a TypedDict for every schema, a Literal for every enum, and the table of
 * operations (method, path, whether it honours Idempotency-Key) the client sends its requests by.
 * The output is valid for Python 3.9 and later: `typing`'s Optional and Union, never `X | Y`, and
 * annotations kept as strings (`from __future__ import annotations`).
 */

interface Schema {
  $ref?: string;
  type?: string | string[];
  enum?: unknown[];
  anyOf?: Schema[];
  oneOf?: Schema[];
  items?: Schema;
  properties?: Record<string, Schema>;
  required?: string[];
  additionalProperties?: boolean | Schema;
  description?: string;
}

interface Parameter {
  $ref?: string;
  name?: string;
  in?: string;
  schema?: Schema;
}

interface Operation {
  operationId?: string;
  parameters?: Parameter[];
}

export interface OpenApiDocument {
  info: { version: string };
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, Schema>; parameters?: Record<string, Parameter> };
}

const PYTHON_KEYWORDS = new Set(
  (
    'False None True and as assert async await break class continue def del elif else except finally for from global if import in is lambda ' +
    'nonlocal not or pass raise return try while with yield'
  ).split(' '),
);
const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options'];

const pascal = (text: string) => text.replace(/(^|[^A-Za-z0-9]+)([A-Za-z0-9])/g, (_match, _separator, letter: string) => letter.toUpperCase());
/** `roles` → `Role`: the name of one item of an array property. */
const singular = (name: string) => (name.length > 1 && name.endsWith('s') ? name.slice(0, -1) : name);
const refName = (ref: string) => ref.slice(ref.lastIndexOf('/') + 1);
const pythonString = (value: unknown) => JSON.stringify(value);

export function pythonTypes(document: OpenApiDocument): string {
  const { schemas } = document.components;
  /** Literal aliases by their values, so that the same enum gets one name wherever it appears. */
  const literals = new Map<string, { name: string; values: unknown[] }>();
  const classes: string[] = [];

  function literal(values: unknown[], name: string): string {
    const key = JSON.stringify(values);
    let known = literals.get(key);
    if (!known) literals.set(key, (known = { name, values }));
    return known.name;
  }

  /** The Python type of a schema; `name` names what it needs to declare (an enum, an object of its own). */
  function pythonType(schema: Schema, name: string): string {
    if (schema.$ref) return refName(schema.$ref);
    if (schema.enum) return literal(schema.enum, name);
    const members = schema.anyOf ?? schema.oneOf;
    if (members) return union(members.map((member) => pythonType(member, name)));
    if (Array.isArray(schema.type)) return union(schema.type.map((type) => pythonType({ ...schema, type }, name)));
    switch (schema.type) {
      case 'string':
        return 'str';
      case 'integer':
        return 'int';
      case 'number':
        return 'float';
      case 'boolean':
        return 'bool';
      case 'null':
        return 'None';
      case 'array':
        return `list[${schema.items ? pythonType(schema.items, singular(name)) : 'Any'}]`;
      case 'object':
        return schema.properties ? typedDict(name, schema) : 'dict[str, Any]';
      default:
        return 'Any';
    }
  }

  function union(types: string[]): string {
    const present = [...new Set(types)].filter((type) => type !== 'None');
    const inner = present.length === 1 ? present[0]! : `Union[${present.join(', ')}]`;
    return present.length < types.length ? `Optional[${inner}]` : inner;
  }

  /** A TypedDict; one with required and optional keys is a required base and a `total=False` subclass (Python 3.9 has no NotRequired). */
  function typedDict(name: string, schema: Schema): string {
    const required = new Set(schema.required ?? []);
    const fields = Object.entries(schema.properties ?? {}).map(([property, propertySchema]) => {
      if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(property) || PYTHON_KEYWORDS.has(property)) {
        throw new Error(`${name}.${property} is not a Python identifier: the generator would need TypedDict's functional form`);
      }
      const comment = propertySchema.description ? `    #: ${propertySchema.description.replace(/\s+/g, ' ')}\n` : '';
      return { property, required: required.has(property), line: `${comment}    ${property}: ${pythonType(propertySchema, name + pascal(property))}` };
    });
    const body = (lines: string[]) => (lines.length ? lines.join('\n') : '    pass');
    const docstring = schema.description ? `    """${schema.description.replace(/\s+/g, ' ')}"""\n\n` : '';
    const mandatory = fields.filter((field) => field.required).map((field) => field.line);
    const optional = fields.filter((field) => !field.required).map((field) => field.line);
    if (mandatory.length && optional.length) {
      classes.push(`class _${name}Required(TypedDict):\n${body(mandatory)}`);
      classes.push(`class ${name}(_${name}Required, total=False):\n${docstring}${body(optional)}`);
    } else {
      classes.push(`class ${name}(TypedDict${mandatory.length ? '' : ', total=False'}):\n${docstring}${body(mandatory.length ? mandatory : optional)}`);
    }
    return name;
  }

  // Resources first, then requests, then parameters: a shared enum is named after the resource (`TaskStatus`).
  const names = Object.keys(schemas);
  for (const name of [...names.filter((name) => !name.endsWith('Request')), ...names.filter((name) => name.endsWith('Request'))]) {
    const schema = schemas[name]!;
    if (schema.type === 'object' && schema.properties) typedDict(name, schema);
    else classes.push(`${name} = ${pythonType(schema, name)}`);
  }

  const operations: string[] = [];
  for (const [path, item] of Object.entries(document.paths)) {
    for (const method of METHODS) {
      const operation = item[method];
      if (!operation?.operationId) continue;
      const parameters = (operation.parameters ?? []).map((parameter) =>
        parameter.$ref ? document.components.parameters![refName(parameter.$ref)]! : parameter,
      );
      for (const parameter of parameters) {
        if (parameter.schema?.enum) literal(parameter.schema.enum, pascal(operation.operationId) + pascal(parameter.name!));
      }
      const idempotencyKey = parameters.some((parameter) => parameter.in === 'header' && parameter.name === 'Idempotency-Key');
      const fields = [pythonString(method.toUpperCase()), pythonString(path), idempotencyKey ? 'True' : 'False'];
      operations.push(`    ${pythonString(operation.operationId)}: Operation(${fields.join(', ')}),`);
    }
  }

  const aliases = [...literals.values()].map(({ name, values }) => `${name} = Literal[${values.map(pythonString).join(', ')}]`);
  const declarations = [...aliases, ...classes].join('\n');
  const imports = ['Any', 'Literal', 'NamedTuple', 'Optional', 'TypedDict', 'Union'].filter(
    (name) => name === 'NamedTuple' || new RegExp(`\\b${name}\\b`).test(declarations),
  );
  return `"""
The types of the LMS Platform API ${document.info.version}, generated from openapi.json by
tools/python-types.ts: \`npm run openapi\` writes this file. Do not edit it.
"""

from __future__ import annotations

from typing import ${imports.join(', ')}

#: The version of the API this package describes: the document's \`info.version\`, and the package's.
API_VERSION = ${pythonString(document.info.version)}

${aliases.join('\n')}


${classes.join('\n\n\n')}


class Operation(NamedTuple):
    method: str
    #: The path template below the base URL, with \`{name}\` for each path parameter.
    path: str
    #: Whether the operation honours \`Idempotency-Key\`, which makes it safe to retry.
    idempotency_key: bool


#: Every operation of the document, by operation id.
OPERATIONS: dict[str, Operation] = {
${operations.join('\n')}
}
`;
}
