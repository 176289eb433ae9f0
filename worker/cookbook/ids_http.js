// IDs over HTTP (snowflaked --http-ids) with fetch() (Node.js 18+, browsers,
// Deno, workers runtimes). Keep the IDs as the strings they come as (or
// BigInt): a JavaScript number holds 53 bits. A 503 (that worker holds no
// lease), a gateway error or a network error is retried: through a balancer
// the next attempt goes to another worker.
async function nextIds(base, n, { attempts = 50, token } = {}) {
  const headers = token ? { Authorization: `Bearer ${token}` } : {};
  for (let attempt = 0; attempt < attempts; attempt++) {
    try {
      const r = await fetch(`${base}/ids?count=${n}`, { headers, signal: AbortSignal.timeout(2000) });
      if (r.ok) return (await r.json()).ids;
      if (![502, 503, 504].includes(r.status)) throw new Error(`${r.status}: ${await r.text()}`);
    } catch (e) {
      if (!(e instanceof TypeError) && e.name !== 'TimeoutError') throw e; // a bad request
    }
    await new Promise((resolve) => setTimeout(resolve, Math.min(10 * (attempt + 1), 200)));
  }
  throw new Error(`no worker answered in ${attempts} attempts`);
}

module.exports = { nextIds };

if (require.main === module) {
  nextIds(process.argv[2], Number(process.argv[3])).then((ids) => console.log(ids.join('\n')));
}
