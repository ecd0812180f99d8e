import { Sandbox } from '@e2b/code-interpreter'
const sb = await Sandbox.create({ timeoutMs: 300_000 })
const show = (l, e) => console.log(l, JSON.stringify({ out: e.logs?.stdout, err: e.logs?.stderr?.map(s=>s.slice(0,120)), text: e.text, error: e.error && (e.error.name + ': ' + String(e.error.value).slice(0,120)) }))
try {
  show('py', await sb.runCode('1'))
  show('bash', await sb.runCode('echo 1', { language: 'bash' }))
  for (let i = 0; i < 8; i++) {
    const c = await sb.createCodeContext({ language: i % 2 ? 'ts' : 'js' })
    show('ctx' + i, await sb.runCode('1+' + i, { context: c }))
  }
  const r = await sb.commands.run('ps -eLf | wc -l').catch(e => ({ stdout: 'ERR ' + e.message.slice(0, 200) }))
  console.log('cmd', r.stdout)
} finally { await sb.kill() }
