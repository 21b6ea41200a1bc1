// Checks airlock's signed provenance block (params._meta["dev.airlock/provenance"]) the way
// airlock's own verifier does (core/provenance.cpp), with nothing but node:crypto:
//
//   payload = "airlock/provenance/v1" + "\0" + canonical JSON (RFC 8785) of every field but the signature
//   sig     = Ed25519 over SHA-256(payload), base64url without padding
//
// The checks run in airlock's order: who signed is settled before anything the signature covers is
// believed, the binding to this call (tool, arguments) before time, so a block replayed to another
// tool reads as a mismatch even when it is also stale.

import { createHash, createPublicKey, verify as ed25519Verify } from 'node:crypto';

export const META_KEY = 'dev.airlock/provenance';
const DOMAIN = 'airlock/provenance/v1';

// RFC 8785 for values that came out of JSON.parse: JSON.stringify already writes strings and numbers
// the way RFC 8785 wants (it borrowed ECMAScript's rules), and the default sort compares UTF-16 code
// units, which is RFC 8785's member order. One caveat: integers beyond 2^53 were already rounded by
// JSON.parse, so a call carrying one fails closed as arguments_mismatch.
export function canonicalJson(value) {
  if (value === null || typeof value === 'boolean' || typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new TypeError('canonical JSON has no form for ' + value);
    return JSON.stringify(value);
  }
  if (Array.isArray(value)) return '[' + value.map(canonicalJson).join(',') + ']';
  if (typeof value === 'object') {
    const keys = Object.keys(value).sort();
    return '{' + keys.map((k) => JSON.stringify(k) + ':' + canonicalJson(value[k])).join(',') + '}';
  }
  throw new TypeError('not a JSON value: ' + typeof value);
}

export function sha256Hex(text) {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

// The key id airlock derives when none is configured (`airlock keygen` prints the same):
// "ed25519-" + the first 16 hex digits of SHA-256 of the raw 32-byte public key.
export function keyIdOf(publicKey) {
  const raw = Buffer.from(publicKey.export({ format: 'jwk' }).x, 'base64url');
  return 'ed25519-' + createHash('sha256').update(raw).digest('hex').slice(0, 16);
}

export function loadPublicKey(pem) {
  const key = createPublicKey(pem);
  if (key.asymmetricKeyType !== 'ed25519') throw new Error('not an Ed25519 public key');
  return key;
}

// Only the exact spelling airlock writes; any other spelling of the same instant would
// re-serialise differently and could never match the signature anyway.
const TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/;
function parseTime(text) {
  if (typeof text !== 'string' || !TIME.test(text)) return null;
  const ms = Date.parse(text);
  // Date.parse rolls 2026-02-30 over into March; a round trip catches it.
  if (Number.isNaN(ms) || new Date(ms).toISOString() !== text.slice(0, 19) + '.000Z') return null;
  return ms;
}

const isString = (v) => typeof v === 'string';
const isObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);

// Strict: 64 bytes, and the only text that encodes them (Buffer's decoder skips junk silently).
function decodeSignature(text) {
  if (!isString(text) || !/^[A-Za-z0-9_-]*$/.test(text)) return null;
  const bytes = Buffer.from(text, 'base64url');
  return bytes.length === 64 && bytes.toString('base64url') === text ? bytes : null;
}

// The verdict for one tools/call: 'ok' or the reason it is refused — the same words airlock uses
// (unsigned, unknown_key, bad_signature, tool_mismatch, arguments_mismatch, not_yet_valid,
// expired), plus 'malformed' for a block that is not the documented shape.
//   block      params._meta["dev.airlock/provenance"] (undefined when absent)
//   toolName   the name this server was called with; '-' in it reads as '.', as airlock names tools
//   args       params.arguments (absent reads as {})
//   server     when set, the server part of tool://server/name must be exactly this
export function verifyProvenance({ block, toolName, args, publicKey, kid, server, now = Date.now() }) {
  if (block === undefined) return 'unsigned';
  if (!isObject(block) || !isObject(block.agent)) return 'malformed';
  const text = [block.run_id, block.effect_key, block.agent.name, block.agent.digest, block.tool, block.args_sha256,
                block.nonce];
  if (!text.every(isString)) return 'malformed';
  const issued = parseTime(block.issued_at);
  const expires = parseTime(block.expires_at);
  if (issued === null || expires === null) return 'malformed';
  if (!('attestation' in block)) return 'unsigned';
  const att = block.attestation;
  if (!isObject(att) || !isString(att.kid) || !isString(att.alg) || !isString(att.sig)) return 'malformed';

  if (att.alg !== 'Ed25519' || att.kid !== kid) return 'unknown_key';
  const sig = decodeSignature(att.sig);
  if (!sig) return 'bad_signature';
  // Fields are picked by name: unknown ones a later version might add are not covered here, and
  // then the signature fails, which is the safe way round.
  const signed = {
    run_id: block.run_id,
    effect_key: block.effect_key,
    agent: { name: block.agent.name, digest: block.agent.digest },
    tool: block.tool,
    args_sha256: block.args_sha256,
    issued_at: block.issued_at,
    expires_at: block.expires_at,
    nonce: block.nonce,
    attestation: { kid: att.kid, alg: att.alg },
  };
  const digest = createHash('sha256').update(DOMAIN + '\0' + canonicalJson(signed), 'utf8').digest();
  if (!ed25519Verify(null, digest, publicKey, sig)) return 'bad_signature';

  const tool = /^tool:\/\/([^/]+)\/([^/]+)$/.exec(block.tool);
  if (!tool || tool[2] !== toolName.replaceAll('-', '.') || (server && tool[1] !== server)) return 'tool_mismatch';
  if (sha256Hex(canonicalJson(args ?? {})) !== block.args_sha256) return 'arguments_mismatch';

  if (now < issued) return 'not_yet_valid';
  if (now >= expires) return 'expired';
  return 'ok';
}
