// ESLint as JupyterLab's extension template has it (typescript-eslint's recommended rules and the template's
// own, formatting left to Prettier), over the extension's TypeScript and build scripts and the project's
// JavaScript it bundles (workbench/assets: the diff view, the report's host). Those live outside
// this folder, which ESLint lints only from a working directory above them: `npm run lint:check` runs it from
// the repository root. Every block names its folder (basePath), so the config means the same from either.
import js from '@eslint/js';
import prettier from 'eslint-config-prettier';
import globals from 'globals';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import tseslint from 'typescript-eslint';

const here = dirname(fileURLToPath(import.meta.url)); // import.meta.dirname needs Node 20.11; setup.sh asks 18
const assets = resolve(here, '../../workbench/assets');

export default tseslint.config(
  { basePath: here, ignores: ['lib/', 'labextension/', '**/*.d.ts'] },
  // views.js and editor.js there are esbuild's output (build-views.mjs)
  { basePath: assets, ignores: ['views.js', 'editor.js'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/naming-convention': [
        'error',
        { selector: 'interface', format: ['PascalCase'], custom: { regex: '^I[A-Z]', match: true } }
      ],
      '@typescript-eslint/no-explicit-any': 'off', // JupyterLab's widget and rendermime internals are untyped
      '@typescript-eslint/no-unused-vars': ['error', { args: 'none' }],
      eqeqeq: ['error', 'smart'],
      'prefer-arrow-callback': 'error'
    }
  },
  { basePath: here, files: ['src/**/*.ts', 'test/**/*.ts'], languageOptions: { globals: globals.browser } },
  { basePath: here, files: ['*.mjs'], languageOptions: { globals: globals.node } },
  { basePath: assets, files: ['*.js'], languageOptions: { globals: globals.browser } },
  prettier
);
