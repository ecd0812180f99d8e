import { Sandbox } from '@e2b/code-interpreter'
const sb = await Sandbox.create({ timeoutMs: 300_000 })
const H = { 'content-type': 'application/json', 'E2b-Sandbox-Id': sb.sandboxId, 'E2b-Sandbox-Port': '49999', 'X-Access-Token': sb.envdAccessToken }
const raw = async (path, body, method = 'POST') => { const r = await fetch(process.env.E2B_SANDBOX_URL + path, { method, headers: H, body: body && JSON.stringify(body) }); return r.status + ' ' + (await r.text()).slice(0, 400).replace(/\n/g, '\\n') }
try {
  const js = await sb.createCodeContext({ language: 'js' })
  console.log('both', await raw('/execute', { code: 'echo hi', context_id: js.id, language: 'bash' }))
  console.log('r', await raw('/contexts', { language: 'r' }))
  console.log('sh', await raw('/contexts', { language: 'sh' }))
  console.log('ctx lang CI', await raw('/contexts', { language: 'Code-Interpreter' }))
  console.log('exec lang node-ish id', await raw('/execute', { code: '1', language: 'default-javascript' }))
  // a context with ID default-javascript as context_id but cwd
  console.log('exec ctx default-bash', await raw('/execute', { code: 'pwd', context_id: 'default-bash' }))
  console.log('create cwd', await raw('/contexts', { language: 'bash', cwd: '/tmp' }))
  { const c2 = JSON.parse((await raw('/contexts', { language: 'bash', cwd: '/home/user/../../etc' })).slice(4).replace(/\\n$/,'')); console.log('cwd2 pwd', await raw('/execute', { code: 'pwd', context_id: c2.id })) }
  { const c3 = JSON.parse((await raw('/contexts', { language: 'bash', cwd: '/tmp' })).slice(4).replace(/\\n$/,'')); console.log('cwd /tmp pwd', await raw('/execute', { code: 'pwd', context_id: c3.id })) }
  const c = JSON.parse((await raw('/contexts', { language: 'bash', cwd: '/home/user/sub' })).slice(4).replace(/\\n$/,''))
  console.log('exec in missing cwd', await raw('/execute', { code: 'pwd', context_id: c.id }))
  console.log('exec in missing cwd again', await raw('/execute', { code: 'pwd', context_id: c.id }))
  const jsc = JSON.parse((await raw('/contexts', { language: 'js', cwd: '/home/user/sub' })).slice(4).replace(/\\n$/,''))
  console.log('js exec in missing cwd', await raw('/execute', { code: 'process.cwd()', context_id: jsc.id }))
} finally { await sb.kill() }
