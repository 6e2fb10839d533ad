/**
 * docs/reference/flags.md's table: every flag of operator/flags.ts with its default, and the
 * values the Deployments in dist/ and its v2 folders pass, read from those manifests.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { OPERATOR_FLAGS, type OperatorFlag } from '../../operator/flags';
import { table } from './markdown';

/** The rendered installs whose Deployment args the table shows, folder -> label. */
const RENDERINGS: readonly (readonly [string, string])[] = [
  ['dist', 'dist/'],
  ['dist/v2', 'v2/'],
  ['dist/v2-stored', 'v2-stored/'],
  ['dist/v2-back-to-v1', 'v2-back-to-v1/'],
];

/** The manager container's args in `<folder>/04-manager.yaml`, flag name -> value. */
export function deploymentArgs(root: string, folder: string): Map<string, string> {
  const file = join(root, folder, '04-manager.yaml');
  if (!existsSync(file)) throw new Error(`${file} is missing: run npm run synth`);
  const args = new Map<string, string>();
  for (const doc of parseAllDocuments(readFileSync(file, 'utf8'))) {
    const obj = doc.toJS() as { kind?: string; spec?: { template?: { spec?: { containers?: { name?: string; args?: string[] }[] } } } } | null;
    if (obj?.kind !== 'Deployment') continue;
    const manager = obj.spec?.template?.spec?.containers?.find((c) => c.name === 'manager');
    for (const a of manager?.args ?? []) {
      const [name, ...value] = a.replace(/^--/, '').split('=');
      args.set(name ?? '', value.join('='));
    }
  }
  return args;
}

/** What the renderings pass for `flag`: one value, or each value with the folders passing it. */
function rendered(flag: string, byFolder: readonly (readonly [string, Map<string, string>])[]): string {
  const values = new Map<string, string[]>();
  for (const [label, args] of byFolder) {
    const v = args.get(flag);
    if (v !== undefined) values.set(v, [...(values.get(v) ?? []), label]);
  }
  if (values.size === 0) return '';
  const all = byFolder.length;
  return [...values]
    .map(([v, folders]) => (values.size === 1 && folders.length === all ? `\`${v}\`` : `\`${v}\` (${folders.join(', ')})`))
    .join('; ');
}

/** The flags table. */
export function flagsTable(root: string, flags: readonly OperatorFlag[] = OPERATOR_FLAGS): string {
  const byFolder = RENDERINGS.map(([folder, label]) => [label, deploymentArgs(root, folder)] as const);
  const rows = flags.map((f) => [
    `\`--${f.name}\`${f.switch ? ` [=${f.value}]` : ` ${f.value}`}`,
    f.default !== undefined ? `\`${f.default}\`` : (f.unset ?? ''),
    f.env ? `\`${f.env}\`` : '',
    rendered(f.name, byFolder),
    f.help,
  ]);
  return [
    '_Rendered by `npm run docs` from `operator/flags.ts` and the Deployments in `dist/`; do not edit._',
    '',
    table(['flag', 'default', 'env when unset', 'the construct renders', 'what'], rows),
  ].join('\n');
}
