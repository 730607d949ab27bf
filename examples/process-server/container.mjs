// The process server's container mode (--container IMAGE): every run_command runs in a fresh
// container, `<engine> run --rm --network none --memory 512m [--label k=v]... IMAGE command args...`
// (the exec form: no shell, as without containers). It is started through reapkit's Supervisor,
// whose spawn() recognizes the run: it labels it (reapkit.run, reapkit.owner) and every stop of the
// client (cancel, terminate_process, the timeout, session end, the drain) stops the container
// through the engine and confirms it gone; a --state-file records the run, so a restarted server
// stops what its SIGKILLed predecessor left running.
//
// The engine's client gets this server's environment (it must reach the daemon: DOCKER_HOST,
// CONTAINER_HOST, XDG_RUNTIME_DIR...); the command in the container gets the image's environment
// and only the variables --pass-env names (`-e NAME`: the value is read by the client, never put
// on a command line).
import { execFile } from 'node:child_process'

export const CONTAINER_DEFAULTS = { engine: 'docker', network: 'none', memory: '512m' }

/** Labels reapkit puts on a run itself: a --container-label must not shadow them. */
const RESERVED_LABELS = new Set(['reapkit.run', 'reapkit.owner'])

/**
 * The container mode's settings from the server's flags, or null without --container. Throws an
 * Error whose message names the flag on a bad value (a value the engine would read as a flag of its
 * own, starting with '-', is refused: it would change what the run is).
 */
export function containerConfig(flags, passEnv) {
  if (flags.container === undefined) {
    const stray = ['engine', 'container-network', 'container-memory'].find((f) => flags[f] !== undefined)
    if (stray || flags['container-label'].length > 0) throw new Error(`--${stray ?? 'container-label'} needs --container IMAGE`)
    return null
  }
  const image = flags.container
  if (!/^[A-Za-z0-9][\w./:@-]*$/.test(image)) throw new Error(`--container: not an image name: ${image}`)
  const engine = flags.engine ?? CONTAINER_DEFAULTS.engine
  if (engine !== 'docker' && engine !== 'podman') throw new Error(`--engine must be docker or podman: ${engine}`)
  const network = flags['container-network'] ?? CONTAINER_DEFAULTS.network
  if (!/^[A-Za-z0-9][\w.:-]*$/.test(network)) throw new Error(`--container-network: not a network name: ${network}`)
  const memory = flags['container-memory'] ?? CONTAINER_DEFAULTS.memory
  if (!/^[1-9]\d*[bkmg]?$/i.test(memory)) throw new Error(`--container-memory must be a size such as 512m or 2g: ${memory}`)
  const labels = flags['container-label'].map((l) => {
    const key = l.slice(0, l.indexOf('='))
    if (!/^[A-Za-z0-9][\w.-]*=/.test(l)) throw new Error(`--container-label must be key=value: ${l}`)
    if (RESERVED_LABELS.has(key)) throw new Error(`--container-label: ${key} is reapkit's own`)
    return l
  })
  const env = passEnv.filter((name) => process.env[name] !== undefined)
  const runFlags = ['run', '--rm', '--network', network, '--memory', memory, ...labels.flatMap((l) => ['--label', l]), ...env.flatMap((n) => ['-e', n])]
  return { engine, image, network, memory, labels, runFlags }
}

/** The client's argv for one run_command: [program, args]. */
export const containerArgv = (config, command, args) => [config.engine, [...config.runFlags, config.image, command, ...args]]

/** How long to keep looking for a run's container after its client started. */
const LEARN_MS = 60_000
const LOOK_EVERY_MS = 250
const LOOK_BOUND_MS = 10_000
const delay = (ms) => new Promise((resolve) => setTimeout(resolve, ms).unref())

/** The ids of the run's containers (by the label reapkit put on it), or [] when the engine did not answer. */
function lookup(record) {
  const args = [...record.globals, 'ps', '-a', '-q', '--no-trunc', '--filter', `label=reapkit.run=${record.runId}`]
  return new Promise((resolve) => {
    execFile(record.bin, args, { env: record.env, timeout: LOOK_BOUND_MS, killSignal: 'SIGKILL' }, (err, stdout) =>
      resolve(err ? [] : stdout.split('\n').map((l) => l.trim()).filter(Boolean)),
    )
  })
}

/**
 * Learns the container id of a run: the engine creates the container after its client starts, so
 * it is looked up by the run's label (the library's ContainerRecord: spawnedInfo(child).container)
 * until found, the client has exited, or LEARN_MS. Calls `found(id)` once.
 */
export async function learnContainerId(record, child, found) {
  const deadline = Date.now() + LEARN_MS
  while (child.exitCode === null && child.signalCode === null && Date.now() < deadline) {
    const [id] = await lookup(record)
    if (id) return found(id)
    await delay(LOOK_EVERY_MS)
  }
}
