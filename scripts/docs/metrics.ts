/**
 * docs/reference/metrics.md's table, read from the places the operator registers its metrics:
 * every `new Counter|Gauge|Histogram|Summary({ name, help, labelNames })` of prom-client under
 * operator/, with names, help and labels resolved by the TypeScript checker (a constant is
 * followed to its value; a helper that passes its parameters on is followed to each of its
 * call sites). A metric registered anywhere in operator/ is in the table without anyone
 * listing it.
 */
import { readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';
import { table } from './markdown';

/** One registered metric. */
export interface MetricRow {
  readonly name: string;
  readonly type: 'counter' | 'gauge' | 'histogram' | 'summary';
  readonly help: string;
  readonly labels: readonly string[];
  /** The file that names it, relative to the repository. */
  readonly file: string;
}

const KINDS: Readonly<Record<string, MetricRow['type']>> = { Counter: 'counter', Gauge: 'gauge', Histogram: 'histogram', Summary: 'summary' };

/** A value found in the source: resolved, or a parameter of the function around it. */
type Found = { readonly value: string | readonly string[] } | { readonly param: ts.ParameterDeclaration };

function tsFiles(dir: string): string[] {
  return readdirSync(dir)
    .sort()
    .flatMap((f) => {
      const p = join(dir, f);
      if (statSync(p).isDirectory()) return tsFiles(p);
      return p.endsWith('.ts') && !p.endsWith('.d.ts') ? [p] : [];
    });
}

/** The metrics registered by the code under `<root>/operator`. */
export function registeredMetrics(root: string): MetricRow[] {
  const files = tsFiles(join(root, 'operator'));
  const options: ts.CompilerOptions = {
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.Node16,
    moduleResolution: ts.ModuleResolutionKind.Node16,
    noEmit: true,
    noLib: true,
    types: [],
  };
  // Only the operator's own files and prom-client's declarations are read: names, help and
  // labels are string literals there, and parsing every other package's types (client-node's
  // alone are over a thousand files) would take seconds for nothing.
  const host = ts.createCompilerHost(options);
  const getSourceFile = host.getSourceFile.bind(host);
  host.getSourceFile = (fileName, languageVersion, onError, create) =>
    fileName.includes('/node_modules/') && !fileName.includes('/node_modules/prom-client/')
      ? ts.createSourceFile(fileName, '', languageVersion)
      : getSourceFile(fileName, languageVersion, onError, create);
  const program = ts.createProgram(files, options, host);
  const checker = program.getTypeChecker();
  const sources = files.map((f) => program.getSourceFile(f)).filter((s): s is ts.SourceFile => s !== undefined);

  const symbolOf = (node: ts.Node): ts.Symbol | undefined => {
    const s = checker.getSymbolAtLocation(node);
    const resolved = s && s.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(s) : s;
    // A function's own name and an import of it reach the same export symbol.
    return resolved && checker.getExportSymbolOfSymbol(resolved);
  };

  /** Whether `expr` (the `X` of `new X(...)`) is one of prom-client's metric classes. */
  const promClass = (expr: ts.Expression): MetricRow['type'] | undefined => {
    if (!ts.isIdentifier(expr)) return undefined;
    const kind = KINDS[expr.text];
    // Imported, or taken from a `require('prom-client')` typed as the module: either way the
    // class is declared in prom-client's types.
    const fromProm = (s: ts.Symbol | undefined) =>
      s?.declarations?.some((d) => d.getSourceFile().fileName.includes('/node_modules/prom-client/')) === true;
    return kind && (fromProm(symbolOf(expr)) || fromProm(checker.getTypeAtLocation(expr).getSymbol())) ? kind : undefined;
  };

  const find = (expr: ts.Expression | undefined): Found | undefined => {
    if (!expr) return undefined;
    if (ts.isStringLiteralLike(expr)) return { value: expr.text };
    if (ts.isArrayLiteralExpression(expr)) {
      const items = expr.elements.map((e) => find(e));
      const strings = items.map((i) => (i && 'value' in i && typeof i.value === 'string' ? i.value : undefined));
      return strings.every((s) => s !== undefined) ? { value: strings as string[] } : undefined;
    }
    const symbol = ts.isIdentifier(expr) ? symbolOf(expr) : undefined;
    const param = symbol?.declarations?.find(ts.isParameter);
    if (param) return { param };
    const type = checker.getTypeAtLocation(expr);
    if (type.isStringLiteral()) return { value: type.value };
    // A constant array (`const LABELS = ['a', 'b']`): follow it to its initializer.
    const decl = symbol?.declarations?.find(ts.isVariableDeclaration);
    if (decl?.initializer && decl.initializer !== expr) return find(decl.initializer);
    return undefined;
  };

  /** Calls of the function declaring `param`, anywhere under operator/. */
  const callsOf = (param: ts.ParameterDeclaration): { call: ts.CallExpression; index: number }[] => {
    const fn = param.parent;
    const index = fn.parameters.indexOf(param);
    const holder = ts.isFunctionDeclaration(fn) ? fn.name : ts.isVariableDeclaration(fn.parent) ? fn.parent.name : undefined;
    const target = holder ? symbolOf(holder) : undefined;
    if (!target) return [];
    const calls: { call: ts.CallExpression; index: number }[] = [];
    const visit = (node: ts.Node): void => {
      if (ts.isCallExpression(node) && symbolOf(node.expression) === target) calls.push({ call: node, index });
      ts.forEachChild(node, visit);
    };
    for (const s of sources) visit(s);
    return calls;
  };

  /**
   * The rows of one registration whose fields are `fields`; a field that is a parameter of
   * the enclosing helper is read at each of the helper's call sites.
   */
  const expand = (type: MetricRow['type'], fields: Readonly<Record<'name' | 'help' | 'labels', Found | undefined>>, at: ts.Node): MetricRow[] => {
    const params = Object.values(fields).filter((f): f is { param: ts.ParameterDeclaration } => f !== undefined && 'param' in f);
    const first = params[0];
    if (!first) {
      const name = fields.name && 'value' in fields.name ? fields.name.value : undefined;
      if (typeof name !== 'string') throw new Error(`${where(at)}: cannot resolve the metric's name`);
      const help = fields.help && 'value' in fields.help && typeof fields.help.value === 'string' ? fields.help.value : '';
      const labels = fields.labels && 'value' in fields.labels && Array.isArray(fields.labels.value) ? fields.labels.value : [];
      return [{ name, type, help, labels, file: relative(root, at.getSourceFile().fileName) }];
    }
    return callsOf(first.param).flatMap(({ call }) => {
      const bound = (f: Found | undefined): Found | undefined => {
        if (!f || !('param' in f)) return f;
        const i = f.param.parent.parameters.indexOf(f.param);
        return find(call.arguments[i]);
      };
      return expand(type, { name: bound(fields.name), help: bound(fields.help), labels: bound(fields.labels) }, call);
    });
  };

  const where = (node: ts.Node): string => {
    const sf = node.getSourceFile();
    const { line } = sf.getLineAndCharacterOfPosition(node.getStart());
    return `${relative(root, sf.fileName)}:${line + 1}`;
  };

  const rows: MetricRow[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isNewExpression(node)) {
      const type = promClass(node.expression);
      const arg = node.arguments?.[0];
      if (type && arg && ts.isObjectLiteralExpression(arg)) {
        const prop = (key: string): Found | undefined => {
          const p = arg.properties.find((q) => q.name && ts.isIdentifier(q.name) && q.name.text === key);
          if (!p) return undefined;
          if (ts.isShorthandPropertyAssignment(p)) {
            const param = checker.getShorthandAssignmentValueSymbol(p)?.declarations?.find(ts.isParameter);
            return param ? { param } : find(p.name);
          }
          return ts.isPropertyAssignment(p) ? find(p.initializer) : undefined;
        };
        rows.push(...expand(type, { name: prop('name'), help: prop('help'), labels: prop('labelNames') }, node));
      }
    }
    ts.forEachChild(node, visit);
  };
  for (const s of sources) visit(s);

  const byName = new Map<string, MetricRow>();
  for (const r of rows) if (!byName.has(r.name)) byName.set(r.name, r);
  return [...byName.values()].sort((a, b) => a.name.localeCompare(b.name));
}

/** The metrics table. */
export function metricsTable(root: string): string {
  const rows = registeredMetrics(root).map((m) => [`\`${m.name}\``, m.type, m.labels.map((l) => `\`${l}\``).join(', '), m.help, `\`${m.file}\``]);
  return [
    '_Rendered by `npm run docs` from the registrations under `operator/`; do not edit._',
    '',
    table(['metric', 'type', 'labels', 'help', 'registered in'], rows),
  ].join('\n');
}
