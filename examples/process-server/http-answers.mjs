// The HTTP front's own answers (the SDK answers the rest): plain or JSON, JSON-RPC errors, and the
// body read with its size counted.

/** Ends `res` with `body` (a string as text, anything else as JSON). */
export function send(res, status, body, headers = {}) {
  if (res.headersSent) return void res.end()
  const text = typeof body === 'string' ? body : JSON.stringify(body)
  res.writeHead(status, {
    'content-type': typeof body === 'string' ? 'text/plain; charset=utf-8' : 'application/json',
    'content-length': Buffer.byteLength(text),
    ...headers,
  })
  res.end(text)
}

/** A JSON-RPC error with no id (the request was refused before it was read as one). */
export function rpcError(res, status, code, message, headers) {
  send(res, status, { jsonrpc: '2.0', error: { code, message }, id: null }, headers)
}

/** 413; what the client still sends is read and dropped (never kept, never parsed), for a while. */
export function tooLarge(req, res, maxBodyBytes) {
  rpcError(res, 413, -32600, `Payload Too Large: the body is over ${maxBodyBytes} bytes`, { connection: 'close' })
  req.resume()
  setTimeout(() => req.socket.destroy(), 5000).unref()
}

/** Reads the body, counting: { text } or { tooLarge: true } (or { aborted: true }). */
export function readBody(req, maxBodyBytes) {
  return new Promise((resolve) => {
    const chunks = []
    let size = 0
    const onData = (chunk) => {
      size += chunk.length
      if (size <= maxBodyBytes) return void chunks.push(chunk)
      req.off('data', onData)
      req.pause()
      resolve({ tooLarge: true })
    }
    req.on('data', onData)
    req.once('end', () => resolve({ text: Buffer.concat(chunks).toString('utf8') }))
    req.once('close', () => resolve({ aborted: true })) // after 'end' this is a no-op
    req.once('error', () => resolve({ aborted: true }))
  })
}
