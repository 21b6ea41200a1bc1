#!/usr/bin/env node
// A tiny upstream MCP server (stdio) that runs a tool only when airlock signed the call: every
// tools/call must carry a provenance block that verifies against airlock's public key, names this
// tool, covers exactly these arguments, is within its validity window and has not been seen before.
//
//   AIRLOCK_PROVENANCE_PUBKEY  path to airlock's public key (PEM; `airlock keygen` writes provenance.pub)
//   AIRLOCK_PROVENANCE_KID     the key id airlock signs under (default: the id derived from the key)
//   AIRLOCK_PROVENANCE_SERVER  optional: the server name airlock gives this upstream, pinned too

import { readFileSync } from 'node:fs';

import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, McpError } from '@modelcontextprotocol/sdk/types.js';

import { META_KEY, keyIdOf, loadPublicKey, verifyProvenance } from './verify.mjs';

function fail(message) {
  process.stderr.write(`provenance-verifier: ${message}\n`);
  process.exit(2);
}

const keyPath = process.env.AIRLOCK_PROVENANCE_PUBKEY;
if (!keyPath) fail('set AIRLOCK_PROVENANCE_PUBKEY to the path of airlock\'s public key (PEM)');
let publicKey;
try {
  publicKey = loadPublicKey(readFileSync(keyPath, 'utf8'));
} catch (e) {
  fail(`cannot load ${keyPath}: ${e.message}`);
}
const kid = process.env.AIRLOCK_PROVENANCE_KID || keyIdOf(publicKey);
const server = process.env.AIRLOCK_PROVENANCE_SERVER || undefined;

// A valid block is good for one call: nonces are remembered until their block expires (after which
// the expiry check refuses it anyway), so a captured request cannot be sent twice.
const seenNonces = new Map();  // nonce -> expires_at in ms
function firstUse(block) {
  const now = Date.now();
  for (const [nonce, until] of seenNonces) if (until <= now) seenNonces.delete(nonce);
  if (seenNonces.has(block.nonce)) return false;
  seenNonces.set(block.nonce, Date.parse(block.expires_at));
  return true;
}

const balances = new Map();

const tools = [{
  name: 'ledger_post',
  description: 'Post an amount (in cents) to an account; runs only with valid airlock provenance.',
  inputSchema: {
    type: 'object',
    properties: {
      account: { type: 'string' },
      amount_cents: { type: 'integer' },
      memo: { type: 'string' },
    },
    required: ['account', 'amount_cents'],
  },
}];

// The low-level Server rather than McpServer: McpServer hands a tool the arguments after its schema
// has parsed them (unknown keys dropped), but the signature covers the arguments as sent.
const mcp = new Server({ name: 'provenance-verifier', version: '1.0.0' }, { capabilities: { tools: {} } });

mcp.setRequestHandler(ListToolsRequestSchema, async () => ({ tools }));

mcp.setRequestHandler(CallToolRequestSchema, async (request) => {
  const { name, arguments: args, _meta: meta } = request.params;
  if (name !== 'ledger_post') throw new McpError(ErrorCode.InvalidParams, `unknown tool: ${name}`);

  let verdict = verifyProvenance({ block: meta?.[META_KEY], toolName: name, args, publicKey, kid, server });
  if (verdict === 'ok' && !firstUse(meta[META_KEY])) verdict = 'replayed';
  const effect = meta?.[META_KEY]?.effect_key ?? '-';
  process.stderr.write(`provenance-verifier: ${name} effect=${effect} verdict=${verdict}\n`);
  if (verdict !== 'ok') {
    return { isError: true, content: [{ type: 'text', text: `refused: provenance ${verdict}` }] };
  }

  const { account, amount_cents: amount } = args ?? {};
  if (typeof account !== 'string' || !Number.isInteger(amount)) {
    return { isError: true, content: [{ type: 'text', text: 'account (string) and amount_cents (integer) are required' }] };
  }
  balances.set(account, (balances.get(account) ?? 0) + amount);
  return {
    content: [{ type: 'text', text: `posted ${amount} to ${account}; balance ${balances.get(account)}` }],
  };
});

await mcp.connect(new StdioServerTransport());
process.stderr.write(`provenance-verifier: ready, trusting key ${kid}\n`);
