// snowfleet from Node.js with node-redis (v4). A JavaScript number holds 53
// bits and an ID needs up to 63: never read IDs as RESP integers here, or
// they are silently rounded into duplicates. Ask for strings (the STRING
// argument) and keep them as strings, or as BigInt.
const { createClient, ErrorReply } = require('redis');

const RETRY = /^(NOLEASE|CLOCKBACK)/;

function connect(host, port) {
  const client = createClient({
    socket: { host, port, connectTimeout: 2000, reconnectStrategy: (n) => Math.min(10 * (n + 1), 200) },
  });
  client.on('error', () => {}); // reconnects are automatic; calls report their own errors
  return client;
}

// n ascending IDs (decimal strings) from one worker, retried on refusal:
// the worker closes the connection after -NOLEASE/-CLOCKBACK and node-redis
// reconnects, through the balancer, to a worker that serves. onError sees
// each failed attempt (count them in your metrics).
async function nextIds(client, n, { attempts = 50, onError } = {}) {
  let last;
  for (let attempt = 0; attempt < attempts; attempt++) {
    try {
      return await client.sendCommand(['NEXTIDS', String(n), 'STRING']);
    } catch (e) {
      if (e instanceof ErrorReply && !RETRY.test(e.message)) throw e; // a bad request
      last = e;
    }
    if (onError) onError(last);
    await new Promise((r) => setTimeout(r, Math.min(10 * (attempt + 1), 200)));
  }
  throw last;
}

module.exports = { connect, nextIds };
