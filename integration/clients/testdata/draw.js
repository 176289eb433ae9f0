// Draws IDs through the cookbook's nextIds (worker/cookbook/nextids.js):
//   draw.js HOST PORT TOTAL BATCH PAUSE_MS MIN_MS LANES [string|integer]
// LANES connections (as a pool would hold) take the batches in turn.
// IDs go to stdout, one a line; each failed attempt to stderr as
// "E <unix_ms> <error>"; it ends once TOTAL IDs are drawn and MIN_MS passed.
// "integer" reads RESP integers as node-redis gives
// them (JavaScript numbers): the negative control of the 53-bit warning.
const path = require('path');
const { connect, nextIds } = require(path.join(process.env.COOKBOOK, 'nextids.js'));

async function main() {
  const [host, port, total, batch, pause, minMs, lanes, mode = 'string'] = process.argv.slice(2);
  const end = Date.now() + Number(minMs);
  const clients = [];
  for (let i = 0; i < Number(lanes); i++) {
    clients.push(connect(host, Number(port)));
    await clients[i].connect();
  }
  const onError = (e) => process.stderr.write(`E ${Date.now()} ${String(e && e.message).replace(/\n/g, ' ')}\n`);
  const lines = [];
  let drawn = 0;
  for (let i = 0; drawn < Number(total) || Date.now() < end; i++) {
    const n = Number(batch);
    const client = clients[i % clients.length];
    let ids;
    if (mode === 'integer') {
      ids = await client.sendCommand(['NEXTIDS', String(n)]); // numbers: rounded past 2^53
    } else {
      ids = await nextIds(client, n, { onError });
    }
    for (const id of ids) lines.push(String(id));
    drawn += ids.length;
    if (lines.length >= 10000) process.stdout.write(lines.splice(0).join('\n') + '\n');
    await new Promise((r) => setTimeout(r, Number(pause)));
  }
  if (lines.length) process.stdout.write(lines.join('\n') + '\n');
  await Promise.all(clients.map((c) => c.disconnect().catch(() => {})));
}

main().catch((e) => {
  process.stderr.write(`fatal: ${(e && (e.stack || e.message)) || e}\n`);
  process.exit(1);
});
