/**
 * The C# client's types, generated from the OpenAPI document as tools/python-types.ts generates the
 * Python client's: a record for every schema, an open string enum for every enum, a query record for
 * every operation with query parameters, the table of operations the client sends its requests by,
 * and the System.Text.Json source-generation context that reads and writes them without reflection
 * (so that the package is trimming- and AOT-safe).
 *
 * - A property the schema requires is `required` and, unless the schema allows null, not nullable;
 *   every other property is nullable (absent and null read alike).
 * - A request property that is optional and may be null (`assignee: null` clears it) is an
 *   `Optional<T>`: left unset it is not sent, set to null it is sent as null.
 * - An enum is a struct over its string (the Azure SDK's extensible enum): version 1 may add values,
 *   and an unknown one reads as itself rather than failing. An enum whose values all belong to
 *   another's is that type: the events a subscription may name are event types.
 */

interface Schema {
  $ref?: string;
  type?: string | string[];
  format?: string;
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
  required?: boolean;
  description?: string;
  schema?: Schema;
}

interface Operation {
  operationId?: string;
  summary?: string;
  parameters?: Parameter[];
  requestBody?: { content?: Record<string, { schema?: Schema }> };
  responses?: Record<string, { content?: Record<string, { schema?: Schema }> }>;
}

export interface OpenApiDocument {
  info: { version: string };
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, Schema>; parameters?: Record<string, Parameter> };
}

export interface CSharpFiles {
  /** Schema.g.cs: the records, enums, query records, operations and the JSON context. */
  source: string;
  /** Version.props: the package's version, the document's `info.version`. */
  versionProps: string;
}

/**
 * Schemas whose own name would not compile or would hurt in C#: `Task` would hide
 * System.Threading.Tasks.Task wherever both are imported, and `Error` has a property `error`,
 * which C# cannot name as its type.
 */
const RENAMED: Record<string, string> = { Task: 'LmsTask', Error: 'ApiError' };
const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options'];
const NAMESPACE = 'Lms.Platform.Api';

interface CsType {
  name: string;
  /** A struct, whose nullable form is `Nullable<T>`. */
  struct: boolean;
  /** The schema allows null. */
  nullable: boolean;
}

const pascal = (text: string) =>
  text
    .replace(/^-(.*)$/, '$1 descending')
    .replace(/(^|[^A-Za-z0-9]+)([A-Za-z0-9])/g, (_match, _separator, letter: string) => letter.toUpperCase())
    .replace(/[^A-Za-z0-9]/g, '');
const singular = (name: string) => (name.length > 1 && name.endsWith('s') ? name.slice(0, -1) : name);
const refName = (ref: string) => ref.slice(ref.lastIndexOf('/') + 1);
const csName = (schemaName: string) => RENAMED[schemaName] ?? pascal(schemaName);
const literal = (value: string) => JSON.stringify(value);
const xml = (text: string) =>
  text
    .replace(/\s+/g, ' ')
    .trim()
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/`([^`]+)`/g, '<c>$1</c>');
const summary = (text: string | undefined, indent: string) => (text ? `${indent}/// <summary>${xml(text)}</summary>\n` : '');

export function csharpTypes(document: OpenApiDocument): CSharpFiles {
  const { schemas } = document.components;
  const parameterOf = (parameter: Parameter) => (parameter.$ref ? document.components.parameters![refName(parameter.$ref)]! : parameter);
  const operations = Object.entries(document.paths).flatMap(([path, item]) =>
    METHODS.flatMap((method) => {
      const operation = item[method];
      return operation?.operationId ? [{ path, method: method.toUpperCase(), operation, id: operation.operationId }] : [];
    }),
  );
  const requestSchemas = new Set(
    operations.flatMap(({ operation }) => {
      const schema = operation.requestBody?.content?.['application/json']?.schema;
      return schema?.$ref ? [refName(schema.$ref)] : [];
    }),
  );

  // Every enum's values with the name its first use proposes, in the order the declarations follow;
  // then each is declared once, under the name of the widest set that holds it.
  const proposals: { values: string[]; name: string }[] = [];
  const propose = (values: unknown[], name: string) => proposals.push({ values: values.map(String), name });
  const resourcesFirst = [
    ...Object.keys(schemas).filter((name) => !requestSchemas.has(name)),
    ...Object.keys(schemas).filter((name) => requestSchemas.has(name)),
  ];
  const visit = (schema: Schema, name: string): void => {
    if (schema.enum) propose(schema.enum, name);
    for (const member of schema.anyOf ?? schema.oneOf ?? []) visit(member, name);
    if (schema.items) visit(schema.items, singular(name));
    for (const [property, propertySchema] of Object.entries(schema.properties ?? {})) visit(propertySchema, name + pascal(property));
  };
  for (const name of resourcesFirst) visit(schemas[name]!, csName(name));
  for (const { id, operation } of operations) {
    for (const parameter of (operation.parameters ?? []).map(parameterOf)) {
      if (parameter.in !== 'header' && parameter.schema) visit(parameter.schema, pascal(id) + pascal(parameter.name!));
    }
  }
  const contains = (wide: string[], narrow: string[]) => narrow.every((value) => wide.includes(value));
  const widest = proposals.filter(
    (candidate, index) =>
      !proposals.some(
        (other, at) =>
          contains(other.values, candidate.values) &&
          (other.values.length > candidate.values.length || (contains(candidate.values, other.values) && at < index)),
      ),
  );
  const enumName = (values: unknown[]) => widest.find((candidate) => contains(candidate.values, values.map(String)))!.name;
  const enums = new Map(widest.map(({ name, values }) => [name, values]));

  const records: string[] = [];
  const declared = new Set<string>();

  function typeOf(schema: Schema, name: string): CsType {
    if (schema.$ref) {
      const target = refName(schema.$ref);
      const referenced = schemas[target]!;
      return referenced.properties ? { name: record(csName(target), referenced), struct: false, nullable: false } : typeOf(referenced, csName(target));
    }
    if (schema.enum) return { name: enumName(schema.enum), struct: true, nullable: false };
    const members = schema.anyOf ?? schema.oneOf ?? (Array.isArray(schema.type) ? schema.type.map((type) => ({ ...schema, type })) : undefined);
    if (members) {
      const present = members.filter((member) => member.type !== 'null');
      const nullable = present.length < members.length;
      const inner = present.length === 1 ? typeOf(present[0]!, name) : { name: 'JsonElement', struct: true, nullable: false };
      return { ...inner, nullable: nullable || inner.nullable };
    }
    switch (schema.type) {
      case 'string':
        return schema.format === 'date-time' ? { name: 'DateTimeOffset', struct: true, nullable: false } : { name: 'string', struct: false, nullable: false };
      case 'integer':
        return { name: schema.format === 'int64' ? 'long' : 'int', struct: true, nullable: false };
      case 'number':
        return { name: 'double', struct: true, nullable: false };
      case 'boolean':
        return { name: 'bool', struct: true, nullable: false };
      case 'null':
        return { name: 'JsonElement', struct: true, nullable: true };
      case 'array': {
        const item = schema.items ? typeOf(schema.items, singular(name)) : { name: 'JsonElement', struct: true, nullable: false };
        return { name: `IReadOnlyList<${spell(item, item.nullable)}>`, struct: false, nullable: false };
      }
      case 'object':
        return schema.properties ? { name: record(name, schema), struct: false, nullable: false } : { name: 'JsonElement', struct: true, nullable: false };
      default:
        return { name: 'JsonElement', struct: true, nullable: false };
    }
  }

  function spell(type: CsType, nullable: boolean): string {
    return nullable ? `${type.name}?` : type.name;
  }

  /** Declares a record for an object schema (once) and returns its name. */
  function record(name: string, schema: Schema): string {
    if (declared.has(name)) return name;
    declared.add(name);
    const required = new Set(schema.required ?? []);
    const isRequest = [...requestSchemas].some((request) => csName(request) === name);
    const lines: string[] = [];
    const compared: { member: string; type: string }[] = [];
    for (const [property, propertySchema] of Object.entries(schema.properties ?? {})) {
      const member = pascal(property);
      if (member === name) throw new Error(`${name}.${property}: C# cannot name a property as its type; add ${name} to RENAMED in tools/csharp-types.ts`);
      const type = typeOf(propertySchema, name + pascal(property));
      const mandatory = required.has(property);
      const attributes = [`[JsonPropertyName(${literal(property)})]`];
      let declaration: string;
      if (isRequest && !mandatory && type.nullable) {
        attributes.push(
          '[JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingDefault)]',
          `[JsonConverter(typeof(OptionalConverter<${type.name}${type.struct ? '?' : ''}>))]`,
        );
        declaration = `public Optional<${type.name}?> ${member} { get; init; }`;
        compared.push({ member, type: `Optional<${type.name}?>` });
      } else {
        declaration = `public ${mandatory ? 'required ' : ''}${spell(type, type.nullable || !mandatory)} ${member} { get; init; }`;
        compared.push({ member, type: spell(type, type.nullable || !mandatory) });
      }
      lines.push(`${summary(propertySchema.description, '    ')}${attributes.map((attribute) => `    ${attribute}\n`).join('')}    ${declaration}`);
    }
    records.push(`${summary(schema.description, '')}public sealed partial record ${name}\n{\n${lines.join('\n\n')}${equality(name, compared)}\n}`);
    return name;
  }

  for (const name of resourcesFirst) {
    const schema = schemas[name]!;
    if (schema.properties) record(csName(name), schema);
  }

  const queries: string[] = [];
  const operationFields: string[] = [];
  const listed = new Set<string>();
  for (const { id, path, method, operation } of operations) {
    const parameters = (operation.parameters ?? []).map(parameterOf);
    const idempotencyKey = parameters.some((parameter) => parameter.in === 'header' && parameter.name === 'Idempotency-Key');
    const title = `${method} ${path}`;
    operationFields.push(
      `    /// <summary>${xml(title)}${operation.summary ? `: ${xml(operation.summary)}` : ''}</summary>\n` +
        `    internal static readonly Operation ${pascal(id)} = new(${literal(id)}, ${literal(method)}, ${literal(path)}, ${idempotencyKey});`,
    );
    const query = parameters.filter((parameter) => parameter.in === 'query');
    if (query.length) queries.push(queryRecord(id, title, query));
    for (const response of Object.entries(operation.responses ?? {}).filter(([status]) => status.startsWith('2'))) {
      const schema = response[1].content?.['application/json']?.schema;
      if (schema?.type === 'array' && schema.items?.$ref) listed.add(typeOf(schema.items, '').name);
    }
  }

  function queryRecord(id: string, title: string, parameters: Parameter[]): string {
    const name = `${pascal(id)}Query`;
    const properties: string[] = [];
    const pairs: string[] = [];
    for (const parameter of parameters) {
      const member = pascal(parameter.name!);
      const type = typeOf(parameter.schema ?? {}, pascal(id) + member);
      const declaration = parameter.required ? `public required ${type.name} ${member} { get; init; }` : `public ${type.name}? ${member} { get; init; }`;
      properties.push(`${summary(parameter.description, '    ')}    ${declaration}`);
      pairs.push(
        parameter.required
          ? `        yield return new(${literal(parameter.name!)}, QueryValue.Of(${member}));`
          : `        if (${member} is { } ${camel(member)}) yield return new(${literal(parameter.name!)}, QueryValue.Of(${camel(member)}));`,
      );
    }
    return (
      `/// <summary>The query parameters of <c>${xml(title)}</c> (${id}); those left null are not sent.</summary>\n` +
      `public sealed partial record ${name}\n{\n${properties.join('\n\n')}\n\n` +
      `    internal IEnumerable<KeyValuePair<string, string>> Parameters()\n    {\n${pairs.join('\n')}\n    }\n}`
    );
  }

  const enumDeclarations = [...enums].map(([name, values]) => openEnum(name, values));
  const serializable = [
    ...resourcesFirst.filter((name) => schemas[name]!.properties).map((name) => csName(name)),
    ...[...listed].map((name) => `List<${name}>`),
  ].map((type) => `[JsonSerializable(typeof(${type}))]`);

  const source = `// <auto-generated>
// The types of the LMS Platform API ${document.info.version}, generated from openapi.json by
// tools/csharp-types.ts: \`npm run openapi\` writes this file. Do not edit it.
// </auto-generated>
#nullable enable
#pragma warning disable CS1591 // Members the document does not describe have no summary.

using System;
using System.Collections.Generic;
using System.Text.Json;
using System.Text.Json.Serialization;

namespace ${NAMESPACE};

public partial class LmsClient
{
    /// <summary>The version of the API this package describes: the document's <c>info.version</c>, and the package's.</summary>
    public const string ApiVersion = ${literal(document.info.version)};
}

${records.join('\n\n')}

${enumDeclarations.join('\n\n')}

${queries.join('\n\n')}

/// <summary>Every operation of the document.</summary>
internal static class Operations
{
${operationFields.join('\n\n')}
}

/// <summary>
/// Reads and writes the API's types without reflection, for trimmed and native AOT applications:
/// <c>JsonSerializer.Deserialize(json, LmsJsonContext.Default.Project)</c>.
/// </summary>
[JsonSourceGenerationOptions(DefaultIgnoreCondition = JsonIgnoreCondition.WhenWritingNull)]
${serializable.join('\n')}
public partial class LmsJsonContext : JsonSerializerContext
{
}
`;
  const versionProps = `<!-- Generated from openapi.json by tools/csharp-types.ts (\`npm run openapi\`): the package's version is the API's. -->
<Project>
  <PropertyGroup>
    <Version>${document.info.version}</Version>
  </PropertyGroup>
</Project>
`;
  return { source, versionProps };
}

/**
 * A record's own equality when it holds a list or raw JSON, which a record compares by reference:
 * two projects read from the same answer are equal, members and all.
 */
function equality(name: string, members: { member: string; type: string }[]): string {
  const structural = (type: string) => type.startsWith('IReadOnlyList<') || type.startsWith('JsonElement');
  if (!members.some(({ type }) => structural(type))) return '';
  const terms = members.map(({ member, type }) =>
    structural(type) ? `Values.Equal(${member}, other.${member})` : `EqualityComparer<${type}>.Default.Equals(${member}, other.${member})`,
  );
  const hashed = members.filter(({ type }) => !structural(type)).map(({ member }) => member);
  return (
    `\n\n    /// <summary>Whether both hold the same values, lists and JSON compared by content.</summary>\n` +
    `    public bool Equals(${name}? other) =>\n        other is not null\n        && ${terms.join('\n        && ')};\n\n` +
    `    /// <inheritdoc />\n    public override int GetHashCode() => Values.Hash(${hashed.join(', ')});`
  );
}

function camel(member: string): string {
  const name = member.charAt(0).toLowerCase() + member.slice(1);
  return CSHARP_KEYWORDS.has(name) ? `@${name}` : name;
}

const CSHARP_KEYWORDS = new Set(
  (
    'abstract as base bool break byte case catch char checked class const continue decimal default delegate do double else enum event ' +
    'explicit extern false finally fixed float for foreach goto if implicit in int interface internal is lock long namespace new null ' +
    'object operator out override params private protected public readonly ref return sbyte sealed short sizeof stackalloc static string ' +
    'struct switch this throw true try typeof uint ulong unchecked unsafe ushort using virtual void volatile while'
  ).split(' '),
);

/** An open string enum: the known values as static properties, any other readable as itself. */
function openEnum(name: string, values: string[]): string {
  const members = values.map((value) => {
    const member = pascal(value);
    if (member === name || member === 'Converter')
      throw new Error(`${name}.${member}: the value ${literal(value)} needs a C# name of its own in tools/csharp-types.ts`);
    return `    /// <summary><c>${xml(value)}</c></summary>\n    public static ${name} ${member} { get; } = new(${literal(value)});`;
  });
  return `/// <summary>
/// An open set of values: those the API documents today are its static properties, and any other
/// (a later version may add one) reads as itself: <c>ToString()</c> gives the value as sent.
/// </summary>
[JsonConverter(typeof(Converter))]
public readonly partial struct ${name} : IEquatable<${name}>
{
    private readonly string? _value;

    /// <summary>A value, known or not.</summary>
    public ${name}(string value) => _value = value ?? throw new ArgumentNullException(nameof(value));

${members.join('\n\n')}

    /// <inheritdoc />
    public bool Equals(${name} other) => string.Equals(_value, other._value, StringComparison.Ordinal);

    /// <inheritdoc />
    public override bool Equals(object? obj) => obj is ${name} other && Equals(other);

    /// <inheritdoc />
    public override int GetHashCode() => _value is null ? 0 : StringComparer.Ordinal.GetHashCode(_value);

    /// <summary>The value as the API spells it.</summary>
    public override string ToString() => _value ?? string.Empty;

    /// <summary>Whether both are the same value.</summary>
    public static bool operator ==(${name} left, ${name} right) => left.Equals(right);

    /// <summary>Whether they are different values.</summary>
    public static bool operator !=(${name} left, ${name} right) => !left.Equals(right);

    /// <summary>A value from its spelling.</summary>
    public static implicit operator ${name}(string value) => new(value);

    internal sealed class Converter : JsonConverter<${name}>
    {
        public override ${name} Read(ref Utf8JsonReader reader, Type typeToConvert, JsonSerializerOptions options) =>
            new(reader.GetString() ?? throw new JsonException("${name} is a string, not null"));

        public override void Write(Utf8JsonWriter writer, ${name} value, JsonSerializerOptions options) => writer.WriteStringValue(value.ToString());
    }
}`;
}
