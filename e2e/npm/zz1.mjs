import { Sandbox } from '@e2b/code-interpreter'
const sb = await Sandbox.create({ timeoutMs: 300_000 })
console.log('sandbox', sb.sandboxId)
const show = (l, e) => console.log(l, JSON.stringify({ out: e.logs?.stdout, err: e.logs?.stderr, text: e.text, error: e.error && (e.error.name + ': ' + e.error.value) }))
try {
  console.log('list0', JSON.stringify(await sb.listCodeContexts()))
  for (const lang of ['python', 'js', 'javascript', 'ts', 'typescript', 'bash', 'r', 'java', 'JavaScript', 'Python', 'BASH', 'node', 'code-interpreter', 'nope', 'sh', '']) {
    try { const c = await sb.createCodeContext({ language: lang }); console.log('create', JSON.stringify(lang), JSON.stringify(c)) }
    catch (e) { console.log('create', JSON.stringify(lang), 'ERR', e.message.slice(0, 200)) }
  }
  const list = await sb.listCodeContexts()
  console.log('list1', JSON.stringify(list.map(c => [c.id, c.language])))
  show('py', await sb.runCode('x = 41; x + 1'))
  show('js', await sb.runCode('const a = 2; a * 21', { language: 'js' }))
  show('js2', await sb.runCode('a', { language: 'javascript' }))
  show('ts', await sb.runCode('const b: number = 3; b', { language: 'ts' }))
  show('bash', await sb.runCode('echo $HOME $PWD; pwd; y=9', { language: 'bash' }))
  show('bash2', await sb.runCode('echo y=$y', { language: 'bash' }))
  show('R', await sb.runCode('1', { language: 'r' }).catch(e => ({ error: { name: 'throw', value: e.message.slice(0, 200) } })))
  show('Bash', await sb.runCode('echo hi', { language: 'Bash' }).catch(e => ({ error: { name: 'throw', value: e.message.slice(0, 200) } })))
  show('env-js', await sb.runCode('process.env.FOO', { language: 'js', envs: { FOO: 'bar' } }))
  show('env-ts', await sb.runCode('process.env.FOO', { language: 'ts', envs: { FOO: 'bar' } }))
  show('env-bash', await sb.runCode('echo "[$FOO]"', { language: 'bash', envs: { FOO: "a'b$(id)" } }))
  show('env-bash-after', await sb.runCode('echo "[$FOO]"', { language: 'bash' }))
  show('env-py', await sb.runCode('import os; os.environ.get("FOO")', { envs: { FOO: 'bar' } }))
  const ctxs = await sb.listCodeContexts()
  console.log('list2', JSON.stringify(ctxs))
} finally { await sb.kill() }
