/**
 * What the compiled operator loads at run time: each operator/ module is transpiled with the
 * build's compiler options (type-only imports vanish, as in the image) and the modules its
 * output loads are checked. The image holds production dependencies only, so a value import of
 * a dev or peer dependency would crash there although every tsx-run test passes.
 */
import { expect } from 'chai';
import { builtinModules } from 'node:module';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import ts from 'typescript';
import { REPO } from '../../support/image';

const OPERATOR = join(REPO, 'operator');
const pkg = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { dependencies?: Record<string, string> };
const production = new Set(Object.keys(pkg.dependencies ?? {}));
const builtins = new Set(builtinModules);

const { config } = ts.readConfigFile(join(REPO, 'tsconfig.build.json'), ts.sys.readFile);
const { options } = ts.parseJsonConfigFileContent(config, ts.sys, REPO);

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return sources(path);
    return e.name.endsWith('.ts') && !e.name.endsWith('.d.ts') ? [path] : [];
  });
}

/** Module specifiers the emitted JavaScript of `file` loads (static, require and dynamic import). */
function loads(file: string): string[] {
  const { outputText } = ts.transpileModule(readFileSync(file, 'utf8'), { compilerOptions: options, fileName: file });
  const out = ts.createSourceFile(`${file}.js`, outputText, ts.ScriptTarget.Latest, false, ts.ScriptKind.JS);
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
      found.push(node.moduleSpecifier.text);
    } else if (ts.isCallExpression(node) && node.arguments.length > 0) {
      const callee = node.expression;
      const isLoad = (ts.isIdentifier(callee) && callee.text === 'require') || callee.kind === ts.SyntaxKind.ImportKeyword;
      const arg = node.arguments[0];
      if (isLoad) {
        if (arg && ts.isStringLiteralLike(arg)) found.push(arg.text);
        else throw new Error(`${relative(REPO, file)}: a require/import with a computed specifier cannot be checked`);
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(out);
  return found;
}

/** `@scope/name/sub` -> `@scope/name`; `name/sub` -> `name`. */
function packageName(spec: string): string {
  const parts = spec.split('/');
  return spec.startsWith('@') ? parts.slice(0, 2).join('/') : (parts[0] ?? spec);
}

const files = sources(OPERATOR);
const loaded = new Map(files.map((f) => [relative(REPO, f), loads(f)] as const));

describe('operator/ loads only what the image ships', () => {
  it('finds the operator modules and their loads', () => {
    expect(files.length).to.be.greaterThan(10);
    expect(loaded.get(join('operator', 'main.ts'))).to.include('./operator');
  });

  it('loads only production dependencies, node builtins and modules inside operator/', () => {
    const bad: string[] = [];
    for (const [file, specs] of loaded) {
      for (const spec of specs) {
        if (spec.startsWith('.')) {
          const target = resolve(dirname(join(REPO, file)), spec);
          // tsc compiles what operator/ imports; a file outside it would be missing from the image's operator/.
          if (!(target + sep).startsWith(OPERATOR + sep)) bad.push(`${file}: ${spec} is outside operator/`);
        } else if (spec.startsWith('node:') ? builtins.has(spec.slice(5)) : builtins.has(spec)) {
          continue;
        } else if (!production.has(packageName(spec))) {
          bad.push(`${file}: ${spec} is not in package.json "dependencies"`);
        }
      }
    }
    expect(bad, bad.join('\n')).to.deep.equal([]);
  });

  it('uses every production dependency (nothing ships that the operator never loads)', () => {
    const used = new Set(
      [...loaded.values()]
        .flat()
        .filter((s) => !s.startsWith('.') && !s.startsWith('node:'))
        .map(packageName),
    );
    expect(
      [...production].filter((d) => !used.has(d)),
      'dependencies the operator never loads: move them to devDependencies',
    ).to.deep.equal([]);
  });
});
