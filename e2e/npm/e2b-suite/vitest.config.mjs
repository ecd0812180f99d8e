// E2B's own SDK tests (js-sdk/tests, code-interpreter/tests, desktop/tests: copied
// unchanged from E2B's repositories, see README.md) run against
// sandboxd with the SDKs from the npm registry. The tests import the SDK
// from its source tree (`../src`); here that is the published package.
// Tests of the SDK's internals, which import modules the package does
// not export, are not copied; skips.mjs lists the copied tests that do
// not run, each with its reason.
import { defineConfig } from 'vitest/config'

// The SDK's public entry points as the tests name them in its tree.
const entry = /(^|\/)src(\/index(\.js)?|\/errors(\.js)?|\/sandbox\/filesystem)?$/

function sdkFromNpm() {
  return {
    name: 'sdk-from-npm',
    enforce: 'pre',
    resolveId(source, importer) {
      if (!importer || !entry.test(source)) return null
      const sdk = importer.includes('/code-interpreter/tests/') ? '@e2b/code-interpreter'
        : importer.includes('/desktop/tests/') ? '@e2b/desktop' : 'e2b'
      return this.resolve(sdk, importer, { skipSelf: true })
    },
  }
}

// Upstream's settings for its node tests (30 s per test), but files share
// their worker's modules.
const common = {
  globals: false,
  isolate: false, // the copied tests mock nothing (the ones that do are left out): one import of the SDK per worker
  environment: 'node',
  testTimeout: 30_000,
  setupFiles: [new URL('./skip.setup.mjs', import.meta.url).pathname],
}

export default defineConfig({
  test: {
    // The tests mostly wait on sandboxd: more files at once than cores.
    maxWorkers: 3,
    projects: [
      { plugins: [sdkFromNpm()], test: { ...common, name: 'js-sdk', include: ['js-sdk/tests/**/*.test.ts'] } },
      { plugins: [sdkFromNpm()], test: { ...common, name: 'code-interpreter', include: ['code-interpreter/tests/**/*.test.ts'] } },
      { plugins: [sdkFromNpm()], test: { ...common, name: 'desktop', include: ['desktop/tests/**/*.test.ts'] } },
    ],
  },
})
