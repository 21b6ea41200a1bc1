// The reference figures for bench_mcp_call_bench: the official TypeScript SDK client making the
// same sequential get-sum calls to the same server-everything, over stdio and Streamable HTTP.
// Run from the repository root: tests/peers/node_modules/.bin/node bench/sdk_call_bench.mjs [calls]
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const peers = path.join(root, 'tests/peers/node_modules');
const sdk = (p) => import(path.join(peers, '@modelcontextprotocol/sdk/dist/esm', p));
const { Client } = await sdk('client/index.js');
const { StdioClientTransport } = await sdk('client/stdio.js');
const { StreamableHTTPClientTransport } = await sdk('client/streamableHttp.js');

const calls = Number(process.argv[2] ?? 1000);
const everything = path.join(peers, '@modelcontextprotocol/server-everything/dist/index.js');

const pct = (v, p) => v.slice().sort((a, b) => a - b)[Math.floor(p * (v.length - 1))];

async function measure(name, transport) {
  const client = new Client({ name: 'sdk-bench', version: '1' });
  await client.connect(transport);
  for (let i = 0; i < 50; ++i) await client.callTool({ name: 'get-sum', arguments: { a: 2, b: 3 } });
  const lat = [];
  const start = performance.now();
  for (let i = 0; i < calls; ++i) {
    const t0 = performance.now();
    await client.callTool({ name: 'get-sum', arguments: { a: 2, b: 3 } });
    lat.push((performance.now() - t0) * 1000);
  }
  const secs = (performance.now() - start) / 1000;
  await client.close();
  return { transport: name, calls, calls_per_s: calls / secs, p50_us: pct(lat, 0.5), p99_us: pct(lat, 0.99) };
}

const rows = [];
rows.push(await measure('sdk-stdio', new StdioClientTransport({ command: process.execPath, args: [everything, 'stdio'] })));

const server = spawn(process.execPath, ['--import', path.join(root, 'tests/support/bind-loopback.mjs'), everything, 'streamableHttp'],
                     { env: { ...process.env, PORT: '0' }, stdio: ['ignore', 'ignore', 'pipe'] });
try {
  const port = await new Promise((resolve, reject) => {
    let buf = '';
    const timer = setTimeout(() => reject(new Error('server did not start')), 60000);
    server.stderr.on('data', (d) => {
      buf += d;
      const m = buf.match(/airlock-test-listening \S+ (\d+)/);
      if (m) { clearTimeout(timer); resolve(Number(m[1])); }
    });
  });
  rows.push(await measure('sdk-http', new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/mcp`))));
} finally {
  server.kill('SIGTERM');
}

console.log('transport     calls    calls/s     p50 us     p99 us');
for (const r of rows)
  console.log(`${r.transport.padEnd(10)} ${String(r.calls).padStart(8)} ${r.calls_per_s.toFixed(0).padStart(10)} ` +
              `${r.p50_us.toFixed(1).padStart(10)} ${r.p99_us.toFixed(1).padStart(10)}`);
console.log(JSON.stringify({ bench: 'sdk_call', rows }));
