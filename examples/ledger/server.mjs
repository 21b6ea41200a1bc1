#!/usr/bin/env node
// The ledger of the TELLER example (examples/teller.yaml): an MCP server over stdio with two tools,
//   read {account}          -> the account's balance
//   post {account, amount}  -> adds amount (minor units) to the account, returns the new balance
// Balances live in memory, starting from LEDGER_OPENING (JSON object, default {"AC-1": 42}). Every
// call is logged to stderr with the effect key from airlock's provenance block, so a post can be
// matched to the journal record that asked for it.

// The SDK as installed beside this file (npm install), else the copy a checkout of airlock has in
// tests/peers, so the example runs from the repository with nothing more to install.
async function sdk(module) {
  try {
    return await import(`@modelcontextprotocol/sdk/${module}`);
  } catch {
    return await import(new URL(`../../tests/peers/node_modules/@modelcontextprotocol/sdk/dist/esm/${module}`, import.meta.url));
  }
}
const { Server } = await sdk('server/index.js');
const { StdioServerTransport } = await sdk('server/stdio.js');
const { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, McpError } = await sdk('types.js');

const META_KEY = 'dev.airlock/provenance';

let opening = { 'AC-1': 42 };
if (process.env.LEDGER_OPENING) {
  try {
    opening = JSON.parse(process.env.LEDGER_OPENING);
  } catch (e) {
    process.stderr.write(`ledger: LEDGER_OPENING is not JSON: ${e.message}\n`);
    process.exit(2);
  }
}
const balances = new Map(Object.entries(opening));

const account = { type: 'string', description: 'The account, e.g. AC-1.' };
const tools = [
  {
    name: 'read',
    description: "Read a ledger account's balance.",
    inputSchema: { type: 'object', properties: { account }, required: ['account'], additionalProperties: false },
    annotations: { readOnlyHint: true },
  },
  {
    name: 'post',
    description: 'Post an amount (minor units) to an account.',
    inputSchema: {
      type: 'object',
      properties: { account, amount: { type: 'integer', description: 'The amount, in minor units.' } },
      required: ['account', 'amount'],
      additionalProperties: false,
    },
  },
];

function failed(text) {
  return { isError: true, content: [{ type: 'text', text }] };
}

const mcp = new Server({ name: 'ledger', version: '1.0.0' }, { capabilities: { tools: {} } });
mcp.setRequestHandler(ListToolsRequestSchema, async () => ({ tools }));
mcp.setRequestHandler(CallToolRequestSchema, async (request) => {
  const { name, arguments: args = {}, _meta: meta } = request.params;
  const effect = meta?.[META_KEY]?.effect_key ?? '-';
  process.stderr.write(`ledger: ${name} ${JSON.stringify(args)} effect=${effect}\n`);
  if (typeof args.account !== 'string' || args.account === '') return failed('account must be a non-empty string');
  if (name === 'read') {
    if (!balances.has(args.account)) return failed(`no account ${args.account}`);
    const result = { account: args.account, balance: balances.get(args.account) };
    return { content: [{ type: 'text', text: JSON.stringify(result) }], structuredContent: result };
  }
  if (name === 'post') {
    if (!Number.isSafeInteger(args.amount)) return failed('amount must be an integer');
    const balance = (balances.get(args.account) ?? 0) + args.amount;
    balances.set(args.account, balance);
    const result = { account: args.account, posted: args.amount, balance };
    return { content: [{ type: 'text', text: JSON.stringify(result) }], structuredContent: result };
  }
  throw new McpError(ErrorCode.InvalidParams, `unknown tool: ${name}`);
});

await mcp.connect(new StdioServerTransport());
process.stderr.write('ledger: ready\n');
