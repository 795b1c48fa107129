// @ts-check
import js from '@eslint/js';
import stylistic from '@stylistic/eslint-plugin';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', '.local/', 'coverage/', 'reports/', 'client/src/schema.ts', 'client/dist/'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: {
        projectService: {
          allowDefaultProject: [
            '*.js',
            '*.mjs',
            'vitest.config.ts',
            'vitest.mutation.config.ts',
            'tools/*.mjs',
            'local/host/functions-core/@azure/functions-core/*.cjs',
          ],
        },
      },
    },
    plugins: { '@stylistic': stylistic },
    rules: {
      // `const { secret: _secret, ...shown } = record` leaves a field out on purpose.
      '@typescript-eslint/no-unused-vars': ['error', { ignoreRestSiblings: true }],
      // Prettier formats; this catches what it cannot break: long strings, comments and templates.
      '@stylistic/max-len': ['error', { code: 160, ignoreUrls: true }],
    },
  },
  {
    // Tests read JSON answers as `any` and assert their shape: that is what they are for. Their case
    // tables hand out async producers alike, whether or not a given one awaits anything.
    files: ['test/**/*.ts'],
    rules: {
      '@typescript-eslint/require-await': 'off',
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
    },
  },
  {
    // What deploys never imports the local stack: it runs beside the app, as Azure runs beside it.
    files: ['functions/**/*.ts', 'shared/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: [{ group: ['**/local/*', '@lms-platform/local-stack', '@lms-platform/local-stack/*'], message: 'The app never imports it.' }] },
      ],
    },
  },
  {
    // Plain JavaScript has no types to check against.
    files: ['**/*.js', '**/*.mjs', '**/*.cjs'],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: { ...tseslint.configs.disableTypeChecked.languageOptions, globals: { process: 'readonly', console: 'readonly', module: 'writable' } },
  },
  {
    // The samples are web pages: the browser's globals.
    files: ['samples/**/*.js'],
    languageOptions: {
      globals: Object.fromEntries(['window', 'document', 'navigator', 'location', 'fetch', 'crypto', 'URL'].map((name) => [name, 'readonly'])),
    },
  },
);
