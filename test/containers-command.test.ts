// Recognizing a container run in an argv (issue 18's contract): pure parsing, no engine needed.
// What is recognized gets two labels at the end of its run flags; anything reapkit cannot read for certain is a
// plain command, exactly as before.
import { spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, readlinkSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { spawn, spawnedInfo } from '../lib/index'
import { prepareContainerRun } from '../lib/mechanisms/container/child'
import { engineOf, labelledRunArgs, parseContainerRun, redactRunArgs } from '../lib/mechanisms/container/command'
import { canUnshare, DIST, exitOf, machineIdField, ROOT } from './helpers'
import { bootStartMs, formatOwner, machineId, ownerAlive, ownerNamespace, ownerOf, ownerStatus, ownerVerdict, ownPidNamespace, parseOwner, processStartTime } from '../lib/mechanisms/container/owner'

const parse = (argv: string[]) => parseContainerRun(argv[0]!, argv.slice(1))

describe('engineOf', () => {
  it.each([
    ['docker', 'docker'],
    ['podman', 'podman'],
    ['nerdctl', 'nerdctl'],
    ['/usr/local/bin/docker', 'docker'],
    ['./bin/podman', 'podman'],
    ['docker.exe', 'docker'],
    ['Docker.EXE', 'docker'],
    ['C:\\Program Files\\Docker\\Docker\\resources\\bin\\docker.exe', 'docker'],
    ['C:/tools/podman.exe', 'podman'],
  ])('%s is %s', (program, engine) => expect(engineOf(program)).toBe(engine))

  it.each(['dockerd', 'docker-compose', 'mydocker', 'docker.sh', '/usr/bin/docker/', 'podman-remote', 'node', ''])(
    '%s is no engine client',
    (program) => expect(engineOf(program)).toBe(null),
  )
})

describe('parseContainerRun: recognized', () => {
  const cases: Array<[string, string[], { globals: string[]; runAt: number; autoRemove: boolean }]> = [
    ['the usual MCP server', ['docker', 'run', '-i', '--rm', 'mcp/time'], { globals: [], runAt: 0, autoRemove: true }],
    ['without --rm', ['podman', 'run', '-i', 'img', 'sleep', '1000'], { globals: [], runAt: 0, autoRemove: false }],
    ['container run', ['docker', 'container', 'run', '--rm', '-i', 'img'], { globals: [], runAt: 1, autoRemove: true }],
    ['-H value', ['docker', '-H', 'unix:///x.sock', 'run', '--rm', 'img'], { globals: ['-H', 'unix:///x.sock'], runAt: 2, autoRemove: true }],
    ['--host=value', ['docker', '--host=tcp://h:2375', 'run', 'img'], { globals: ['--host=tcp://h:2375'], runAt: 1, autoRemove: false }],
    ['-Hvalue attached', ['docker', '-Hunix:///x', 'run', 'img'], { globals: ['-Hunix:///x'], runAt: 1, autoRemove: false }],
    ['--context and -D', ['docker', '--context', 'remote', '-D', 'run', '-i', 'img'], { globals: ['--context', 'remote', '-D'], runAt: 3, autoRemove: false }],
    ['-c context, -l level, --tlsverify', ['docker', '-c', 'ctx', '-l', 'debug', '--tlsverify', 'container', 'run', '--rm', 'img'], { globals: ['-c', 'ctx', '-l', 'debug', '--tlsverify'], runAt: 6, autoRemove: true }],
    ['--config dir', ['docker', '--config', '/tmp/cfg', 'run', 'img'], { globals: ['--config', '/tmp/cfg'], runAt: 2, autoRemove: false }],
    ['podman --url', ['podman', '--url', 'unix:///run/p.sock', 'run', '--rm', 'img'], { globals: ['--url', 'unix:///run/p.sock'], runAt: 2, autoRemove: true }],
    ['podman -c connection, --remote', ['podman', '--remote', '-c', 'machine', 'run', 'img'], { globals: ['--remote', '-c', 'machine'], runAt: 3, autoRemove: false }],
    ['podman --root --runroot --log-level=', ['podman', '--root', '/r', '--runroot', '/rr', '--log-level=debug', 'run', '--rm', 'img'], { globals: ['--root', '/r', '--runroot', '/rr', '--log-level=debug'], runAt: 5, autoRemove: true }],
    ['nerdctl -n namespace', ['nerdctl', '-n', 'k8s.io', 'run', '--rm', '-i', 'img'], { globals: ['-n', 'k8s.io'], runAt: 2, autoRemove: true }],
    ['nerdctl --address', ['nerdctl', '--address', '/run/c.sock', 'run', 'img'], { globals: ['--address', '/run/c.sock'], runAt: 2, autoRemove: false }],
    ['.exe and a Windows path', ['C:\\Program Files\\Docker\\docker.exe', 'run', '-i', '--rm', 'img'], { globals: [], runAt: 0, autoRemove: true }],
    ['clustered -it', ['docker', 'run', '-it', '--rm', 'img'], { globals: [], runAt: 0, autoRemove: true }],
    ['--rm=true', ['docker', 'run', '--rm=true', '-i', 'img'], { globals: [], runAt: 0, autoRemove: true }],
    ['--rm=false', ['docker', 'run', '--rm=false', '-i', 'img'], { globals: [], runAt: 0, autoRemove: false }],
    ['--rm then --rm=false', ['docker', 'run', '--rm', '--rm=false', 'img'], { globals: [], runAt: 0, autoRemove: false }],
    ['-d=false', ['docker', 'run', '-d=false', '--rm', 'img'], { globals: [], runAt: 0, autoRemove: true }],
    ['--detach=false', ['docker', 'run', '--detach=false', 'img'], { globals: [], runAt: 0, autoRemove: false }],
    ['value flags before --rm', ['docker', 'run', '-e', 'A=1', '--name', 'x', '-v', '/a:/b', '--rm', 'img'], { globals: [], runAt: 0, autoRemove: true }],
    ['-eA=1 attached and --env=B', ['docker', 'run', '-eA=1', '--env=B=2', '--rm', 'img'], { globals: [], runAt: 0, autoRemove: true }],
    ['a cluster ending in a value flag', ['docker', 'run', '-ie', 'A=1', '--rm', 'img'], { globals: [], runAt: 0, autoRemove: true }],
    ['a value that looks like a flag', ['docker', 'run', '--name', '--rm', 'img'], { globals: [], runAt: 0, autoRemove: false }],
    ['--rm after the image is the command\'s', ['docker', 'run', '-i', 'img', 'cmd', '--rm'], { globals: [], runAt: 0, autoRemove: false }],
    ['-d after the image is the command\'s', ['docker', 'run', '-i', 'img', 'cmd', '-d'], { globals: [], runAt: 0, autoRemove: false }],
    ['-- ends the flags', ['docker', 'run', '--rm', '--', 'img'], { globals: [], runAt: 0, autoRemove: true }],
    ['--init, --cidfile, --label of the user', ['docker', 'run', '--init', '--cidfile', '/tmp/c', '--label', 'a=b', '-i', 'img'], { globals: [], runAt: 0, autoRemove: false }],
    ['podman --replace --tls-verify=false', ['podman', 'run', '--replace', '--tls-verify=false', '--rm', 'img'], { globals: [], runAt: 0, autoRemove: true }],
  ]
  it.each(cases)('%s', (_what, argv, expected) => {
    const run = parse(argv)
    expect(run).not.toBe(null)
    expect({ globals: run!.globals, runAt: run!.runAt, autoRemove: run!.autoRemove }).toEqual(expected)
    expect(run!.bin).toBe(argv[0])
  })
})

describe('parseContainerRun: a plain command', () => {
  const cases: Array<[string, string[]]> = [
    ['not an engine', ['node', 'run', 'img']],
    ['-d', ['docker', 'run', '-d', '--rm', 'img']],
    ['--detach', ['docker', 'run', '--detach', 'img']],
    ['--detach=true', ['podman', 'run', '--detach=true', 'img']],
    ['-d in a cluster', ['docker', 'run', '-dit', 'img']],
    ['-d later in the flags', ['docker', 'run', '-i', '--rm', '-d', 'img']],
    ['exec', ['docker', 'exec', '-i', 'c', 'sh']],
    ['start -a', ['docker', 'start', '-a', 'c']],
    ['compose', ['docker', 'compose', 'up']],
    ['container exec', ['docker', 'container', 'exec', 'c', 'sh']],
    ['an unknown global flag', ['docker', '--frobnicate', 'run', 'img']],
    ['an unknown global with a value', ['docker', '--frob=1', 'run', 'img']],
    ['a podman-only global given to docker', ['docker', '--url', 'x', 'run', 'img']],
    ['a docker-only global given to podman', ['podman', '-H', 'x', 'run', 'img']],
    ['a global value missing', ['docker', '-H']],
    ['an unknown run flag', ['docker', 'run', '--frobnicate', 'img']],
    ['an unknown short run flag', ['docker', 'run', '-Z', 'img']],
    ['no image', ['docker', 'run', '--rm', '-i']],
    ['a run flag value missing', ['docker', 'run', '--name']],
    ['--help', ['docker', 'run', '--help']],
    ['--rm with a non-boolean value', ['docker', 'run', '--rm=maybe', 'img']],
    ['no subcommand', ['docker']],
    ['-- before the subcommand', ['docker', '--', 'run', 'img']],
    ['--version global', ['docker', '--version', 'run', 'img']],
  ]
  it.each(cases)('%s', (_what, argv) => expect(parse(argv)).toBe(null))
})

describe('labelledRunArgs', () => {
  it('inserts the two labels at the end of the run flags, right before the image; nothing else changes', () => {
    const args = ['-H', 'unix:///x', 'container', 'run', '-i', '--rm', '--name', 'n', 'img', 'sleep', '1']
    const run = parseContainerRun('docker', args)!
    expect(run.flagsEnd).toBe(8)
    const out = labelledRunArgs(args, run, { runId: 'RID', owner: 'h/b/1/2' })
    expect(out).toEqual(['-H', 'unix:///x', 'container', 'run', '-i', '--rm', '--name', 'n', '--label', 'reapkit.run=RID', '--label', 'reapkit.owner=h/b/1/2', 'img', 'sleep', '1'])
    expect(args).toHaveLength(11) // not mutated
    // The labelled argv is still read the same way, and ours are its last labels.
    const again = parseContainerRun('docker', out)!
    expect({ runAt: again.runAt, autoRemove: again.autoRemove, globals: again.globals }).toEqual({ runAt: 3, autoRemove: true, globals: ['-H', 'unix:///x'] })
    expect(again.labels).toEqual(['reapkit.run=RID', 'reapkit.owner=h/b/1/2'])
  })

  it("after the user's own labels (the engine keeps a label's last value), and before a `--` that precedes the image", () => {
    const args = ['run', '--label', 'reapkit.run=mine', '-il', 'reapkit.owner=x', '-lreapkit.run=m2', '--label=a=b', '--rm', '--', 'img', '--label', 'cmd']
    const run = parseContainerRun('podman', args)!
    expect(run.labels).toEqual(['reapkit.run=mine', 'reapkit.owner=x', 'reapkit.run=m2', 'a=b'])
    expect(run.flagsEnd).toBe(8)
    const out = labelledRunArgs(args, run, { runId: 'RID', owner: 'h/b/1/2' })
    expect(out).toEqual([...args.slice(0, 8), '--label', 'reapkit.run=RID', '--label', 'reapkit.owner=h/b/1/2', '--', 'img', '--label', 'cmd'])
    expect(parseContainerRun('podman', out)!.labels.slice(-2)).toEqual(['reapkit.run=RID', 'reapkit.owner=h/b/1/2'])
  })

  it('a run with no flags: the labels go right after run', () => {
    const run = parseContainerRun('docker', ['run', 'img'])!
    expect(labelledRunArgs(['run', 'img'], run, { runId: 'R', owner: 'o' })).toEqual(['run', '--label', 'reapkit.run=R', '--label', 'reapkit.owner=o', 'img'])
  })
})

describe('redactRunArgs', () => {
  const R = '<redacted>'
  it.each<[string, string[], string[]]>([
    ['docker', ['run', '-e', 'TOKEN=s3cret', 'img'], ['run', '-e', `TOKEN=${R}`, 'img']],
    ['docker', ['run', '--env', 'TOKEN=s3cret', '--env=B=x=y', 'img'], ['run', '--env', `TOKEN=${R}`, `--env=B=${R}`, 'img']],
    ['docker', ['run', '-eTOKEN=s3cret', '-e=A=1', '-ite', 'B=2', 'img'], ['run', `-eTOKEN=${R}`, `-e=A=${R}`, '-ite', `B=${R}`, 'img']],
    ['podman', ['--remote', 'container', 'run', '--creds', 'me:pw', '-e', 'HOME', 'img'], ['--remote', 'container', 'run', '--creds', R, '-e', 'HOME', 'img']],
    // Any engine command, not only a run reapkit recognizes: -d, a flag it does not know, create, exec.
    ['docker', ['run', '-d', '-e', 'PASSWORD=hunter2', 'img'], ['run', '-d', '-e', `PASSWORD=${R}`, 'img']],
    ['docker', ['run', '--rm', '--some-future-flag', '-e', 'PASSWORD=hunter2', 'img'], ['run', '--rm', '--some-future-flag', '-e', `PASSWORD=${R}`, 'img']],
    ['docker', ['run', '--rm', '--some-future-flag', 'value', '-eP=hunter2', 'img'], ['run', '--rm', '--some-future-flag', 'value', `-eP=${R}`, 'img']],
    ['docker', ['container', 'create', '-e', 'PASSWORD=hunter2', 'img'], ['container', 'create', '-e', `PASSWORD=${R}`, 'img']],
    ['docker', ['exec', '-e', 'PASSWORD=hunter2', 'ctr', 'sh'], ['exec', '-e', `PASSWORD=${R}`, 'ctr', 'sh']],
    ['/usr/bin/Docker.exe', ['exec', '-it', '--env=PW=hunter2', 'ctr', 'sh'], ['exec', '-it', `--env=PW=${R}`, 'ctr', 'sh']],
    // podman's other secrets: --env-merge (the value), --decryption-key key:passphrase, --creds, login --password (all of it).
    ['podman', ['run', '--rm', '--env-merge', 'X=${X}secret', '--env-merge=Y=s', 'img'], ['run', '--rm', '--env-merge', `X=${R}`, `--env-merge=Y=${R}`, 'img']],
    ['podman', ['run', '--rm', '--decryption-key', 'key.pem:pass', '--decryption-key=k:p', 'img'], ['run', '--rm', '--decryption-key', R, `--decryption-key=${R}`, 'img']],
    ['podman', ['pull', '--creds=u:pw', 'img'], ['pull', `--creds=${R}`, 'img']],
    ['docker', ['login', '-u', 'me', '--password', 'pw', 'reg'], ['login', '-u', 'me', '--password', R, 'reg']],
    ['docker', ['build', '--build-arg', 'TOKEN=t', '.'], ['build', '--build-arg', `TOKEN=${R}`, '.']],
    // Names only (no value), a -e that is another flag's value, and the container's own command
    // (redacted too: an unknown flag may hide where the engine's flags end).
    ['docker', ['run', '--rm', '-e', 'PW', '-uedward', '-w=/e=x', 'img'], ['run', '--rm', '-e', 'PW', '-uedward', '-w=/e=x', 'img']],
    ['docker', ['run', '--rm', '-e', 'A=1', '--', 'img', '-e', 'B=2'], ['run', '--rm', '-e', `A=${R}`, '--', 'img', '-e', `B=${R}`]],
    ['docker', ['run', '-i', 'img', 'env', '-e', 'X=1'], ['run', '-i', 'img', 'env', '-e', `X=${R}`]],
    ['docker', ['run', '-e', '-e', 'X=1', 'img'], ['run', '-e', '-e', `X=${R}`, 'img']],
    // Not an engine: unchanged.
    ['node', ['-e', 'X=1'], ['-e', 'X=1']],
    ['sudo', ['docker', 'run', '-e', 'X=1', 'img'], ['docker', 'run', '-e', 'X=1', 'img']],
  ])('%s %j', (command, args, expected) => {
    const copy = [...args]
    expect(redactRunArgs(command, args)).toEqual(expected)
    expect(args).toEqual(copy) // a new array
    const run = parseContainerRun(command, args)
    if (run !== null) expect(parseContainerRun(command, expected)).toEqual(run) // same shape: read back as the same run
  })
})

describe('owner', () => {
  it('formats and parses back', () => {
    const me = ownerOf()
    expect(parseOwner(formatOwner(me))).toEqual(me)
    expect(me.pid).toBe(process.pid)
  })

  it.runIf(process.platform === 'linux')('names this process by its start time and boot', () => {
    const me = ownerOf()
    expect(me.startTime).toMatch(/^[0-9]+$/)
    expect(me.bootId).toMatch(/^[0-9a-f-]{36}$/)
    expect(me.startTime).toBe(processStartTime(process.pid))
    expect(ownerStatus(me)).toBe('alive')
    expect(ownerAlive(me)).toBe(true)
  })

  it.runIf(process.platform === 'linux')('a recycled pid, a dead pid, an earlier boot: gone; another host: unknown', () => {
    const me = ownerOf()
    expect(ownerStatus({ ...me, startTime: String(Number(me.startTime) + 1) })).toBe('gone')
    expect(ownerStatus({ ...me, pid: 2 ** 22 + 12345 })).toBe('gone') // beyond pid_max's default
    expect(ownerStatus({ ...me, bootId: '00000000-0000-0000-0000-000000000000' })).toBe('gone')
    expect(ownerStatus({ ...me, hostname: `${me.hostname}-elsewhere` })).toBe('unknown')
    expect(ownerAlive({ ...me, hostname: `${me.hostname}-elsewhere` })).toBe(false)
  })

  it.runIf(process.platform === 'linux')('names its PID namespace, and is judged only from that namespace', () => {
    const me = ownerOf()
    expect(me.pidNamespace).toMatch(/^pidns:[1-9][0-9]*$/)
    expect(me.pidNamespace).toBe(ownPidNamespace())
    expect(formatOwner(me)).toBe(`${me.hostname}/${me.bootId}/${me.pid}/${me.startTime}/${me.pidNamespace}/${me.machineId}`)
    const elsewhere = { ...me, pidNamespace: me.pidNamespace === 'pidns:1' ? 'pidns:2' : 'pidns:1' }
    expect(ownerNamespace(me)).toBe('same')
    expect(ownerNamespace(elsewhere)).toBe('other')
    // Our own pid and start time, but a number in another namespace: not judged either way.
    expect(ownerStatus(elsewhere)).toBe('unknown')
    expect(ownerStatus({ ...elsewhere, startTime: String(Number(me.startTime) + 1) })).toBe('unknown')
    // An earlier boot ended every namespace of it.
    expect(ownerStatus({ ...elsewhere, bootId: '00000000-0000-0000-0000-000000000000' })).toBe('gone')
    // A label written before the namespace was recorded is read as before.
    const { pidNamespace: _ns, ...old } = me
    expect(ownerNamespace(old)).toBe('unrecorded')
    expect(ownerStatus(old)).toBe('alive')
    expect(ownerStatus({ ...old, startTime: String(Number(me.startTime) + 1) })).toBe('gone')
  })

  it('parses a label with its PID namespace and machine id, and ones without (older labels, macOS)', () => {
    const mid = 'mid:0123456789abcdef0123456789abcdef'
    expect(parseOwner(`h/b/12/34/pidns:4026531836/${mid}`)).toEqual({ hostname: 'h', bootId: 'b', pid: 12, startTime: '34', pidNamespace: 'pidns:4026531836', machineId: mid })
    expect(parseOwner('h/b/12/34/pidns:4026531836/mid:-')).toEqual({ hostname: 'h', bootId: 'b', pid: 12, startTime: '34', pidNamespace: 'pidns:4026531836', machineId: 'mid:-' })
    expect(parseOwner('h/b/12/34/pidns:4026531836')).toEqual({ hostname: 'h', bootId: 'b', pid: 12, startTime: '34', pidNamespace: 'pidns:4026531836' })
    expect(parseOwner('h/b/12/34')).toEqual({ hostname: 'h', bootId: 'b', pid: 12, startTime: '34' })
  })

  it("reads 'pidns:-' (a Linux writer that could not read its namespace) as another namespace: never judged", () => {
    const me = ownerOf()
    const unknown = parseOwner(formatOwner({ ...me, pidNamespace: 'pidns:-' }))!
    expect(unknown.pidNamespace).toBe('pidns:-')
    expect(ownerNamespace(unknown)).toBe('other')
    expect(ownerStatus(unknown)).toBe('unknown')
    expect(ownerStatus({ ...unknown, pid: 2 ** 22 + 1 })).toBe('unknown')
  })

  it.each(['h/b/1/2/pidns:', 'h/b/1/2/pidns:0', 'h/b/1/2/pidns:x', 'h/b/1/2/ns:5', 'h/b/1/2/pidns:5/6', 'h/b/1/2/'])('%j is no owner (a damaged namespace field)', (value) =>
    expect(parseOwner(value)).toBe(null),
  )

  it.each(['h/b/1/2/pidns:5/mid:', 'h/b/1/2/pidns:5/mid:0123', 'h/b/1/2/pidns:5/mid:0123456789ABCDEF0123456789ABCDEF', 'h/b/1/2/pidns:5/mid:-/x'])('%j is no owner (a damaged machine id field)', (value) =>
    expect(parseOwner(value)).toBe(null),
  )

  // Issue 28 item 4: a label of this host name with another boot id was 'gone' ("an earlier boot"),
  // so two machines of one name on one engine read each other's live runs as leftovers.
  it.runIf(process.platform === 'linux')('another boot id is an earlier boot only with this machine id, and a creation before this boot', () => {
    const me = ownerOf()
    expect(me.machineId).toBe(machineId())
    expect(machineId()).toMatch(/^mid:([0-9a-f]{32}|-)$/)
    const otherBoot = { ...me, bootId: '00000000-0000-0000-0000-000000000000' }
    const boot = bootStartMs()!
    expect(boot).toBeGreaterThan(0)
    const { machineId: _mid, ...noMachine } = otherBoot
    expect(ownerVerdict(noMachine)).toMatchObject({ status: 'unknown', why: expect.stringMatching(/names no machine id.*not ours to judge/) })
    expect(ownerVerdict({ ...otherBoot, machineId: 'mid:-' }).status).toBe('unknown')
    expect(ownerVerdict({ ...otherBoot, machineId: 'mid:0123456789abcdef0123456789abcdef' })).toMatchObject({ status: 'unknown', why: expect.stringMatching(/another machine.*same name/) })
    if (machineId() === 'mid:-') return // nothing here to tell an earlier boot by
    expect(ownerVerdict(otherBoot)).toMatchObject({ status: 'gone', why: expect.stringContaining('earlier boot') })
    expect(ownerVerdict(otherBoot, { createdMs: boot - 60_000 }).status).toBe('gone')
    expect(ownerVerdict(otherBoot, { createdMs: Date.now() })).toMatchObject({ status: 'unknown', why: expect.stringMatching(/created it during this boot/) })
  })

  it.each(['', 'a/b/c', 'a/b/c/d/e', 'h/b/0/1', 'h/b/x/1', 'h/b/12/x', '/b/1/2', 'h//1/2', 'h/b/-1/2'])('%j is no owner', (value) =>
    expect(parseOwner(value)).toBe(null),
  )

  it('a "-" start time and boot (non-Linux) parse', () => {
    expect(parseOwner('mac/-/123/-')).toEqual({ hostname: 'mac', bootId: '-', pid: 123, startTime: '-' })
  })
})

describe('spawn() option container', () => {
  it.each([['yes'], [1], [null], [{}]])('container: %j is refused before anything starts', (value) => {
    expect(() => spawn('docker', ['run', 'img'], { container: value as never })).toThrow(expect.objectContaining({ name: 'TypeError', code: 'ERR_INVALID_ARG_TYPE' }))
  })

  it('a shell command is never rewritten (a shell string is not read)', async () => {
    const child = spawn('docker', ['run', '-i', '--rm', 'img'], { shell: true, stdio: 'ignore', env: { ...process.env, PATH: '/nonexistent' } })
    const exited = exitOf(child) // bounded
    expect(spawnedInfo(child)?.container).toBe(undefined)
    expect(child.spawnargs.join(' ')).not.toContain('reapkit.run')
    child.kill('SIGKILL')
    await exited // reaped before the leak guard looks (it was not waited for: flaky under load)
  })

  it('a client that cannot be started (ENOENT) records no container', async () => {
    const child = spawn('/nonexistent/bin/docker', ['run', '-i', 'img'], { stdio: 'ignore' })
    const err = await new Promise<NodeJS.ErrnoException>((res) => child.once('error', res))
    expect(err.code).toBe('ENOENT')
    expect(spawnedInfo(child)?.container).toBe(undefined)
  })

  it("arguments that are not strings are not read (Node's spawn judges them)", () => {
    expect(prepareContainerRun('docker', ['run', 5 as unknown as string, 'img'], {})).toBe(null)
    expect(prepareContainerRun('docker', ['run', 'img'], {})).not.toBe(null)
  })
})

// Where the owner label's PID namespace comes from, for both writers (spawn() and the C wrapper),
// with no engine: the client is a stand-in `docker` script that records its run argv. In a child
// PID namespace the label names that namespace, under its own /proc or under the parent's (unshare
// --pid without --mount-proc): a label without it would be judged by its pid in the reader's
// namespace. Under the parent's /proc, whose entry at the writer's pid number is another process,
// the start time is '-'. The stand-in records its own namespace (the writer's: it is its child).
describe.runIf(canUnshare)('the owner label from a child PID namespace', () => {
  const BIN = join(ROOT, 'bin', 'reapkit')
  const ours = readlinkSync('/proc/self/ns/pid').replace(/^pid:\[(\d+)\]$/, 'pidns:$1')
  let dir = ''
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'reapkit-ns-label-'))
    const record = '{ printf \'%s\\n\' "$@"; echo "ns=$(readlink /proc/self/ns/pid)"; } > "$RUN_ARGS"'
    writeFileSync(join(dir, 'docker'), `#!/bin/sh\n[ "$1" = run ] && ${record}\nexit 0\n`, { mode: 0o755 })
  })
  afterEach(() => rmSync(dir, { recursive: true, force: true }))

  /** The owner label the stand-in client received when `writer` ran it under `unshare ...flags`, and the namespace it ran in. */
  function labelFrom(flags: string[], writer: 'spawn' | 'wrapper'): { label: string[]; ns: string } {
    const docker = join(dir, 'docker')
    const out = join(dir, `${writer}-${flags.length}.args`)
    const command =
      writer === 'spawn'
        ? [process.execPath, '-e', `const c = require(${JSON.stringify(DIST)}).spawn(${JSON.stringify(docker)}, ['run', '-i', 'img'], { stdio: 'ignore' }); c.on('exit', () => {})`]
        : [BIN, '--', docker, 'run', '-i', 'img']
    // --kill-child: the namespace's PID 1 goes with unshare, whatever happens.
    const r = spawnSync('unshare', ['--pid', '--fork', '--kill-child', ...flags, ...command], { env: { ...process.env, RUN_ARGS: out }, encoding: 'utf8', timeout: 30_000, stdio: ['ignore', 'ignore', 'pipe'] })
    expect(r.status, r.stderr).toBe(0)
    const lines = readFileSync(out, 'utf8').split('\n')
    const label = lines.find((a) => a.startsWith('reapkit.owner='))
    const ns = lines.find((a) => a.startsWith('ns=pid:['))
    expect(label, lines.join('\n')).toBeDefined()
    expect(ns, lines.join('\n')).toBeDefined()
    return { label: label!.slice('reapkit.owner='.length).split('/'), ns: ns!.replace(/^ns=pid:\[(\d+)\]$/, 'pidns:$1') }
  }

  for (const writer of ['spawn', 'wrapper'] as const) {
    it(`${writer}: names the child namespace, under its own /proc and under the parent's (there with start '-')`, () => {
      const own = labelFrom(['--mount-proc'], writer)
      expect(own.label).toHaveLength(6)
      expect(own.label[4]).toBe(own.ns)
      expect(own.label[4]).not.toBe(ours)
      expect(own.label[3]).toMatch(/^[0-9]+$/)
      expect(own.label[5], 'the machine, whatever the namespace').toBe(machineIdField())
      const parents = labelFrom([], writer)
      expect(parents.label).toHaveLength(6)
      expect(parents.label[5]).toBe(machineIdField())
      expect(parents.label[4]).toMatch(/^pidns:[1-9][0-9]*$/)
      expect(parents.label[4]).toBe(parents.ns)
      expect(parents.label[4]).not.toBe(ours)
      expect(parents.label[3]).toBe('-')
    })
  }
})
