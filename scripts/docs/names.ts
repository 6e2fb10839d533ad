/**
 * docs/reference/annotations-and-labels.md's tables: the annotations, labels and finalizers
 * the operator reads or writes (operator/api/v1/well-known.ts), and the labels every object of
 * the installation carries (infra/labels.ts). Keys come from the constants' values, the text
 * from their doc comments, so a new constant or a reworded comment shows up here.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';
import * as wellKnown from '../../operator/api/v1/well-known';
import { COMMON_LABELS, MANAGER_SELECTOR } from '../../infra/labels';
import { table } from './markdown';

const WELL_KNOWN = join('operator', 'api', 'v1', 'well-known.ts');

/** Doc comments of the exported constants of a module's source, by name, as one line each. */
export function constantDocs(source: string, file: string): Map<string, string> {
  const sf = ts.createSourceFile(file, source, ts.ScriptTarget.ES2022, true);
  const docs = new Map<string, string>();
  for (const stmt of sf.statements) {
    if (!ts.isVariableStatement(stmt) || !stmt.modifiers?.some((m) => m.kind === ts.SyntaxKind.ExportKeyword)) continue;
    const text = ts
      .getJSDocCommentsAndTags(stmt)
      .filter(ts.isJSDoc)
      .map((d) => ts.getTextOfJSDocComment(d.comment) ?? '')
      .join(' ');
    for (const decl of stmt.declarationList.declarations) {
      if (ts.isIdentifier(decl.name)) docs.set(decl.name.text, text.replace(/\s+/g, ' ').trim());
    }
  }
  return docs;
}

type Kind = 'annotation' | 'label' | 'finalizer';

function kindOf(constant: string): Kind | undefined {
  if (constant.endsWith('_ANNOTATION')) return 'annotation';
  if (constant.endsWith('_LABEL')) return 'label';
  if (constant.endsWith('_FINALIZER')) return 'finalizer';
  return undefined;
}

/** The well-known names table: key, kind, value (for labels with one) and what it does. */
export function namesTable(root: string): string {
  const docs = constantDocs(readFileSync(join(root, WELL_KNOWN), 'utf8'), WELL_KNOWN);
  const values = wellKnown as unknown as Readonly<Record<string, unknown>>;
  // `{@link X}` becomes the value of X, as a reader sees it in a manifest.
  const linked = (text: string) =>
    text.replace(/\{@link (\w+)\}/g, (_m, name: string) => (typeof values[name] === 'string' ? `\`${String(values[name])}\`` : `\`${name}\``));
  // A constant documented as "Value of {@link X}." is the value X takes.
  const valueOf = new Map<string, string>();
  for (const [constant, doc] of docs) {
    const target = /^Value of \{@link (\w+)\}\.?$/.exec(doc)?.[1];
    if (target && typeof values[constant] === 'string') valueOf.set(target, String(values[constant]));
  }
  const rows = new Map<string, string[]>();
  const order: Kind[] = ['annotation', 'label', 'finalizer'];
  const constants = [...docs.keys()].filter((c) => kindOf(c) !== undefined && typeof values[c] === 'string');
  constants.sort((a, b) => order.indexOf(kindOf(a)!) - order.indexOf(kindOf(b)!) || String(values[a]).localeCompare(String(values[b])));
  for (const constant of constants) {
    const key = String(values[constant]);
    const doc = linked(docs.get(constant) ?? '');
    // Two constants may name one key (the Secret's in-use finalizer is the config's): one row, both texts.
    const row = rows.get(key);
    if (row) row[3] = `${row[3] ?? ''} ${doc}`;
    else rows.set(key, [`\`${key}\``, kindOf(constant)!, valueOf.has(constant) ? `\`${valueOf.get(constant) ?? ''}\`` : '', doc]);
  }
  return [
    `_Rendered by \`npm run docs\` from \`${WELL_KNOWN}\`; do not edit._`,
    '',
    table(['key', 'kind', 'value', 'what it is'], [...rows.values()]),
  ].join('\n');
}

/** The labels of the installation's own objects. */
export function installLabelsTable(): string {
  const keys = [...new Set([...Object.keys(COMMON_LABELS), ...Object.keys(MANAGER_SELECTOR)])].sort();
  const rows = keys.map((k) => [
    `\`${k}\``,
    `\`${COMMON_LABELS[k] ?? MANAGER_SELECTOR[k] ?? ''}\``,
    k in COMMON_LABELS ? 'every object of the installation' : "the manager's Pods; the selector of its Deployment and Services",
  ]);
  return ['_Rendered by `npm run docs` from `infra/labels.ts`; do not edit._', '', table(['label', 'value', 'on'], rows)].join('\n');
}
