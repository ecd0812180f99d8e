import { Sandbox } from '@e2b/code-interpreter'
const sb = await Sandbox.create({ timeoutMs: 300_000, envs: { SBV: 'sandbox-level' } })
const show = (l, e) => console.log(l, JSON.stringify({ out: e.logs?.stdout, err: e.logs?.stderr?.map(s=>s.slice(0,160)), text: e.text, error: e.error && (e.error.name + ': ' + String(e.error.value).slice(0,160)) }))
try {
  show('bash env', await sb.runCode('echo $SBV $HOME', { language: 'bash' }))
  show('js env', await sb.runCode('process.env.SBV', { language: 'js' }))
  const r = await sb.commands.run('python3 -c "import os; print(os.getcwd(), os.environ.get(\'PWD\'))"', { cwd: '/tmp' })
  console.log('cmd cwd', r.stdout)
  show('py cwd', await sb.runCode('import os; os.chdir("/tmp"); import subprocess; subprocess.run(["python3","-c","import os;print(os.environ.get(\'PWD\'), os.getcwd())"])'))
  for (let i = 0; i < 10; i++) {
    const c = await sb.createCodeContext({ language: 'js' })
    const e = await sb.runCode('1+' + i, { context: c })
    if (e.error || !e.text) { show('ctx' + i, e); break }
  }
  const r2 = await sb.commands.run('echo still can run').catch(e => ({ stdout: 'ERR ' + e.message.slice(0, 200) }))
  console.log('cmd after', r2.stdout)
} finally { await sb.kill() }
