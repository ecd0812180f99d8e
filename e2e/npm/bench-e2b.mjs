// E2B's SDK as an agent framework uses it, timed for sandboxd-bench: a
// sandbox created, its first command run, then killed (untimed). Given
// TOTAL and CLIENTS, that many clients do it TOTAL times in all and the
// milliseconds from create to the first command's output are printed as
// JSON; given no arguments, one sample for each line read, its
// milliseconds printed on a line (sandboxd-bench lets the pool refill in
// between). E2B_API_KEY, E2B_API_URL and E2B_SANDBOX_URL say where the
// listener is, as examples/e2b.env does.
import { Sandbox } from 'e2b';
import { createInterface } from 'node:readline';

async function sample() {
  const began = performance.now();
  const sb = await Sandbox.create('base');
  const r = await sb.commands.run('echo 1');
  const took = performance.now() - began;
  if (r.stdout !== '1\n') throw new Error(`first command: ${JSON.stringify(r)}`);
  await sb.kill();
  return took;
}

const [total, clients] = process.argv.slice(2).map(Number);
if (total) {
  const samples = [];
  let left = total;
  await Promise.all(Array.from({ length: clients }, async () => {
    for (; left > 0; left--) samples.push(await sample());
  }));
  console.log(JSON.stringify(samples));
} else {
  for await (const _ of createInterface({ input: process.stdin })) console.log(await sample());
}
