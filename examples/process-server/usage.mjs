// `reapkit-process-server --help` (and `node server.mjs --help`): what server.mjs's header says at
// length, in a screen.
export const usage = `reapkit-process-server [options]: an MCP server whose tools run commands and never leave one behind

Tools: run_command (under reapkit's native supervisor, tied to the request; cancelling it stops
the command), list_processes, terminate_process, get_output (only what it started for the caller).
run_command runs programs as this server's user: it runs only what --allow names. Its result
carries the newest output kept (--output-bytes; outputSkipped: bytes before it); while it runs, each
line goes out as a notification, at most 1000 waiting (beyond: dropped, counted in droppedLines;
get_output still has them within --output-bytes).

Options:
  --allow <cmd>          a command run_command may run (repeatable, or comma-separated). Default: none
  --allow-any            run any command (only for a machine and a user you trust the client with)
  --pass-env <NAME>      pass this variable to commands (repeatable); they get PATH, HOME, LANG only
  --state-file <path>    record what it runs; started again after a crash, stop what was left first
  --http <port>          serve Streamable HTTP on 127.0.0.1:<port>/mcp instead of stdio
  --host <address>       the address to bind in HTTP mode. Default: 127.0.0.1
  --token <token>        a bearer token for HTTP (repeatable; also PROCESS_SERVER_TOKEN). Default: one
                         generated and printed once on stderr
  --allow-origin <o>     a browser Origin allowed in HTTP mode (repeatable). Default: localhost
  --max-body-bytes <n>   the largest HTTP request body. Default: 1048576
  --session-idle-ms <n>  close an idle HTTP session after this long. Default: 600000
  --output-bytes <n>     the newest n bytes of each process's output are kept (stdout and stderr
                         together) for get_output and run_command's result. Default: 65536
  --output-total-bytes <n>  the memory all kept output may take (buffers and a fixed overhead per
                         process); ended processes' goes first. Default: 16777216
  --control-socket <path>  open the Supervisor's control socket there (owner-only, beside the state
                         file): reapkit ps|logs|restart|stop|top --socket <path> (docs/operators.md)
  --container <image>    run every command in a fresh container of this image instead:
                         <engine> run --rm --network none --memory 512m IMAGE command args...
                         Every stop (cancel, terminate_process, timeout, session end, drain) stops
                         the container through the engine; --state-file records containers too
  --engine <name>        docker or podman. Default: docker
  --container-network <n> the containers' network. Default: none
  --container-memory <s> the containers' memory limit. Default: 512m
  --container-label <k=v> a label on every container (repeatable)
  --help                 this text

It drains on SIGTERM, SIGINT, SIGHUP (stdio: also stdin end and its host's death): calls in flight
are answered, every process it started is stopped, one report line goes to stderr. GRACE_MS sets the
grace (stdio 8000, HTTP 20000).

It needs the MCP TypeScript SDK 1.x (@modelcontextprotocol/sdk), an optional peer dependency of
reapkit. From a host's configuration:
  { "command": "npx", "args": ["-y", "-p", "reapkit", "-p", "@modelcontextprotocol/sdk",
                               "reapkit-process-server", "--allow", "uptime,df"] }
`
