// The lint: the rules a type checker cannot give, chiefly that every promise has an owner.
import tseslint from 'typescript-eslint'

export default tseslint.config(
  // The dashboard's assets are the browser's scripts, checked by the browser tests.
  { ignores: ['dist/**', 'node_modules/**', 'coverage/**', 'test/bench/**', 'scripts/**', 'eslint.config.mjs', 'src/dashboard/assets/**'] },
  {
    files: ['src/**/*.ts', 'test/**/*.ts', 'vitest.config.ts'],
    languageOptions: {
      parser: tseslint.parser,
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname }
    },
    plugins: { '@typescript-eslint': tseslint.plugin },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      // A promise nobody awaits or catches fails where nothing hears it.
      '@typescript-eslint/no-floating-promises': ['error', { ignoreVoid: true }],
      // An async function where a callback's answer is ignored (an event handler, forEach) floats too.
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/await-thenable': 'error',
      '@typescript-eslint/return-await': ['error', 'always'],
      'no-async-promise-executor': 'error'
    }
  }
)
