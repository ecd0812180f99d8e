// Skips the tests skips.mjs lists, before their sandboxes are made.
// E2B_SUITE_ALL=1 runs them too, to see which of them pass by now.
import { beforeEach } from 'vitest'
import { skipReason } from './skips.mjs'

beforeEach(({ task, skip }) => {
  if (process.env.E2B_SUITE_ALL) return
  const reason = skipReason(task)
  if (reason) skip(reason)
})
