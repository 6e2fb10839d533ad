// Lint rules that guard the layering in ../shared/STYLE.md and the async discipline an
// operator needs (an un-awaited promise is a lost error or a reconcile that never ends).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['node_modules/**', 'dist/**', 'imports/**', 'build/**', 'lib/**', 'bench/results/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      // A default clause must not hide a union member; a switch on a plain string needs one.
      '@typescript-eslint/switch-exhaustiveness-check': ['error', { considerDefaultExhaustiveForUnions: false, requireDefaultForNonUnion: true }],
    },
  },
  {
    // examples/ci is a user's repository: its own tsconfig.json resolves `bucketoperator` from an
    // installed package, which this checkout does not have. The root tsconfig maps the name to
    // infra/ (typecheck reads the example that way), so lint types the example through it too.
    files: ['examples/ci/**/*.ts'],
    languageOptions: {
      parserOptions: { projectService: false, project: './tsconfig.json', tsconfigRootDir: import.meta.dirname },
    },
  },
  {
    files: ['operator/runtime/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['**/bucket/**', '**/bucket', '**/provider-client/**', '**/provider-client', '**/api/v1/**', '**/api/v1'],
              message: 'operator/runtime is generic machinery: it must not import domain code.',
            },
          ],
        },
      ],
    },
  },
  {
    // STYLE.md: operator/runtime/index.ts is the one import point of the runtime for bucket/,
    // so the runtime can move code between its modules without touching the domain.
    files: ['operator/bucket/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['../runtime/*', '../../runtime/*', '**/operator/runtime/*'],
              message: "operator/bucket imports the runtime only through its index: import from '../runtime'.",
            },
          ],
        },
      ],
    },
  },
  {
    // operator/api/ is the bottom layer (ARCHITECTURE.md: it imports nothing of ours): infra/
    // and every operator layer import it, so an import upward would make a cycle and would
    // pull the runtime (or the provider client) into infra/ and into generated manifests.
    files: ['operator/api/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: [
                '**/runtime',
                '**/runtime/**',
                '**/bucket',
                '**/bucket/**',
                '**/provider-client',
                '**/provider-client/**',
                '**/infra',
                '**/infra/**',
                '**/operator/main*',
                '**/operator/operator*',
                '**/provider',
                '**/provider/**',
              ],
              message: 'operator/api is the bottom layer: it must not import the runtime, the domain, the provider client or infra.',
            },
          ],
        },
      ],
    },
  },
  {
    // client-node loads all its generated models at import (about 70 MiB of RSS); the image
    // and the packaged kubectl plugin run without it (a devDependency). Its types cost nothing
    // and stay allowed.
    files: ['operator/**/*.ts', 'provider/**/*.ts', 'cli/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          paths: [
            {
              name: '@kubernetes/client-node',
              allowTypeImports: true,
              message: 'Only `import type` from @kubernetes/client-node at run time: use operator/runtime (KubeClient, loadRestConfig).',
            },
          ],
          patterns: [
            {
              group: ['@kubernetes/client-node/*'],
              allowTypeImports: true,
              message: 'Only `import type` from @kubernetes/client-node at run time: use operator/runtime (KubeClient, loadRestConfig).',
            },
          ],
        },
      ],
    },
  },
  {
    files: ['infra/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: [
                '**/operator/runtime/**',
                '**/operator/bucket/**',
                '**/operator/provider-client/**',
                '**/operator/main*',
                '!**/operator/runtime/rbac',
                '!**/operator/bucket/rbac',
                '!**/operator/bucket/names',
              ],
              message: 'infra/ imports only operator/api/ (and RBAC rule declarations and owned-object names).',
            },
          ],
        },
      ],
    },
  },
  {
    files: ['**/*.mjs', '**/*.js'],
    ...tseslint.configs.disableTypeChecked,
  },
);
