// An independent check of airlock's canonical JSON (RFC 8785): generated JSON texts go, one per
// line, to tests/tools/canon_tool (airlock's parse_ijson + canonical) and to
// canonicalize(JSON.parse(text)) from canonicalize 5.1.0, written by the RFC's author. Every line
// must agree byte for byte, or both sides must refuse it.
//
// The generator is written here in JavaScript, not in C++, so that nothing in it shares code or
// assumptions with the implementation under test: it writes texts (odd number spellings, escapes
// chosen at random) and the reference reads them with the JavaScript engine's own JSON.parse,
// whose numbers are exactly RFC 8785's model (IEEE 754 doubles, I-JSON).
//
//   node canon_check.mjs --tool PATH [--n N] [--seed S] [--random-seed]
// --random-seed runs a second round of N values from a seed drawn now, printed with the figures,
// so each run also tries something new and a failure can be replayed with --seed.

import { spawn } from 'node:child_process';
import { randomInt } from 'node:crypto';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

// The pinned peers of tests/peers, found from this file's place rather than the working directory.
const peers = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../peers/node_modules');
const { default: canonicalize } = await import(path.join(peers, 'canonicalize/lib/canonicalize.js'));

const args = process.argv.slice(2);
const option = (name, fallback) => {
  const at = args.indexOf(name);
  return at < 0 ? fallback : args[at + 1];
};
const tool = option('--tool');
const count = Number(option('--n', '100000'));
const seeds = [Number(option('--seed', '8785'))];
if (args.includes('--random-seed')) seeds.push(randomInt(1, 2 ** 32));
if (!tool) throw new Error('--tool: the path of canon_tool is required');
if (!Number.isInteger(count) || count < 1) throw new Error(`--n: expected a positive integer, got ${option('--n')}`);
if (!seeds.every(Number.isInteger)) throw new Error(`--seed: expected an integer, got ${option('--seed')}`);

// --- a seeded generator (mulberry32: small, and the same sequence on every machine) ---

function rng (seed) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (n) => Math.floor(next() * n);
  return { next, int, pick: (list) => list[int(list.length)], chance: (p) => next() < p };
}

const view = new DataView(new ArrayBuffer(8));
const fromBits = (hi, lo) => { view.setUint32(0, hi); view.setUint32(4, lo); return view.getFloat64(0); };
const bitsOf = (d) => { view.setFloat64(0, d); return view.getBigUint64(0); };
const fromBig = (b) => { view.setBigUint64(0, BigInt.asUintN(64, b)); return view.getFloat64(0); };
// The doubles next to d, below and above (d > 0): where a notation switch or a rounding is decided.
const neighbours = (d) => [fromBig(bitsOf(d) - 1n), d, fromBig(bitsOf(d) + 1n)];

// Where Number::toString changes notation (1e21, 1e-6, 1e-7), the ends of the range, and where
// integers stop being exact (2^53) or fitting 64 bits.
const boundaries = [1e21, 1e-6, 1e-7, 1e20, 1e22, 2 ** 53, 2 ** 63, 2 ** 64, 5e-324, 2.2250738585072014e-308,
  1.7976931348623157e308, 0.1, 0.5, 1, 9.999999999999999e20, 123456789012345680000];

function randomDouble (r) {
  switch (r.int(6)) {
    case 0: // any finite bit pattern: the whole range, equally by exponent
      for (;;) { const d = fromBits(r.int(2 ** 32), r.int(2 ** 32)); if (Number.isFinite(d)) return d; }
    case 1: // subnormals
      return fromBits((r.chance(0.5) ? 0x80000000 : 0) + r.int(0x100000), r.int(2 ** 32));
    case 2: // at and beside a boundary
      return (r.chance(0.5) ? -1 : 1) * r.pick(neighbours(r.pick(boundaries)));
    case 3: // decimal magnitudes of everyday numbers
      return Number((r.next() * 10 ** r.int(8)).toFixed(r.int(6)));
    case 4: // 10^k itself and its neighbours, k over the whole range
      return r.pick(neighbours(Number(`1e${r.int(617) - 308}`) || 5e-324));
    default: // integers beyond 2^53, exact or not as doubles
      return (r.chance(0.5) ? -1 : 1) * Math.floor(2 ** (53 + r.int(40)) * (1 + r.next()));
  }
}

// A double written the ways a JSON writer might: shortest, 17 digits, exponent spellings.
function spellDouble (r, d) {
  const s = String(d);
  switch (r.int(5)) {
    case 0: return s;
    case 1: return d.toPrecision(17);
    case 2: return d.toExponential().replace('e+', r.pick(['e+', 'E+', 'e', 'E']));
    case 3: return d.toExponential(r.int(21)); // fewer digits: another double, fine
    default: return s.includes('e') ? s : `${s}${s.includes('.') ? '' : '.0'}e0`;
  }
}

// Numbers that arrive as text: integers of every width, -0, and odd spellings of the same value.
function numberText (r) {
  switch (r.int(8)) {
    case 0: return String(r.int(2000) - 1000);
    case 1: return r.pick(['-0', '-0.0', '0e10', '0.0E-5', '1E+2', '0.1e1', '100e-2', '1e0', '10E-1', '-1e-0',
      '1.000000000000000000001', '9007199254740993', '-9007199254740993', '18446744073709551615',
      '18446744073709551616', '-9223372036854775809', '9223372036854775807', '123456789012345678901234567890',
      '0.1000000000000000055511151231257827021181583404541015625', '2.4703282292062327e-324',
      '2.4703282292062328e-324', '1e-400', '4.9406564584124654e-324', '1.7976931348623158e308']);
    case 2: { // a wide integer, written exactly
      let digits = String(1 + r.int(9));
      for (let n = r.int(30); n > 0; --n) digits += r.int(10);
      return (r.chance(0.5) ? '-' : '') + digits;
    }
    case 3: { // many significant digits: decided by correct rounding only
      let digits = '';
      for (let n = 17 + r.int(30); n > 0; --n) digits += r.int(10);
      return `${r.chance(0.3) ? '-' : ''}${r.int(10)}.${digits}e${r.int(600) - 300}`;
    }
    default: return spellDouble(r, randomDouble(r));
  }
}

// --- strings: every escape, control characters, and keys whose UTF-16 order is not UTF-8 order ---

const codePointPools = [
  () => 0x20 + 0, // space
  (r) => r.int(0x20), // control characters
  (r) => r.pick([0x22, 0x5c, 0x2f, 0x7f, 0x2028, 0x2029, 0xfeff, 0xfffd, 0xffff, 0xe000, 0xf8ff]),
  (r) => 0x21 + r.int(0x5e), // printable ASCII
  (r) => 0x80 + r.int(0x780), // two-byte UTF-8
  (r) => { for (;;) { const c = 0x800 + r.int(0xf800); if (c < 0xd800 || c > 0xdfff) return c; } }, // BMP
  (r) => 0xe000 + r.int(0x2000), // private use, sorts after astral characters in UTF-16
  (r) => 0x10000 + r.int(0x100000), // astral: a surrogate pair in UTF-16
  (r) => r.pick([0x1f600, 0x10000, 0x10ffff, 0x1d11e]),
];

const hex4 = (u) => u.toString(16).padStart(4, '0');

// One code point as JSON text: raw, as \uXXXX (a pair for astral ones) or its short escape.
function spellCodePoint (r, c) {
  const short = { 0x22: '\\"', 0x5c: '\\\\', 0x2f: '\\/', 0x08: '\\b', 0x0c: '\\f', 0x0a: '\\n', 0x0d: '\\r', 0x09: '\\t' };
  const must = c < 0x20 || c === 0x22 || c === 0x5c;
  const way = r.int(3);
  if (short[c] && (must || way === 0)) return short[c];
  if (must || way === 1) {
    const units = String.fromCodePoint(c);
    let out = '';
    for (let k = 0; k < units.length; ++k) {
      const u = hex4(units.charCodeAt(k));
      out += `\\u${r.chance(0.5) ? u : u.toUpperCase()}`;
    }
    return out;
  }
  return String.fromCodePoint(c);
}

// Returns [text, value]: the JSON text of a string and the string it means, so that keys can be
// kept unique by meaning (airlock refuses duplicates, JSON.parse keeps the last).
function stringText (r, length) {
  let text = '"';
  let value = '';
  for (let n = length; n > 0; --n) {
    if (r.chance(0.0005)) { // a lone surrogate: RFC 8785 input must be well formed
      const u = r.chance(0.5) ? 0xd800 + r.int(0x400) : 0xdc00 + r.int(0x400);
      text += `\\u${hex4(u)}`;
      value += String.fromCharCode(u);
      continue;
    }
    const c = r.pick(codePointPools)(r);
    text += spellCodePoint(r, c);
    value += String.fromCodePoint(c);
  }
  return [text + '"', value];
}

// --- values ---

// Each top-level value may hold at most this many values in all: wide and deep, yet a line stays
// small enough to compare thousands a second.
const valueBudget = 600;
let budget = 0;

// A raw newline would end the line canon_tool reads, so whitespace inside a value is the other three.
const ws = (r) => (r.chance(0.9) ? '' : r.pick([' ', '\t', '\r', ' \t\r ']));

function valueText (r, depth) {
  const room = depth < 12 ? 4 : 2;
  budget -= 1;
  switch (r.int(budget <= 0 ? 5 : depth > 16 ? 6 : 8)) {
    case 0: return r.pick(['null', 'true', 'false']);
    case 1: case 2: return numberText(r);
    case 3: case 4: return stringText(r, r.int(12))[0];
    case 5: return deepText(r, depth);
    case 6: { // an array, sometimes wide
      const n = r.chance(0.05) ? 50 + r.int(200) : r.int(room + 2);
      const items = [];
      for (let k = 0; k < n && budget > 0; ++k) items.push(ws(r) + valueText(r, depth + 1) + ws(r));
      return `[${items.join(',')}]`;
    }
    default: return objectText(r, depth, r.chance(0.05) ? 40 + r.int(120) : r.int(room + 3));
  }
}

function objectText (r, depth, n) {
  const seen = new Set();
  const members = [];
  for (let k = 0; k < n && budget > 0; ++k) {
    // Short keys from few pools collide in prefixes, which is where ordering bugs show.
    const [key, meaning] = stringText(r, 1 + r.int(4));
    if (seen.has(meaning)) continue;
    seen.add(meaning);
    members.push(`${ws(r)}${key}${ws(r)}:${ws(r)}${valueText(r, depth + 1)}${ws(r)}`);
  }
  return `{${members.join(',')}}`;
}

// A narrow chain nested up to 128 levels, the deepest airlock reads.
function deepText (r, depth) {
  if (!r.chance(0.05) || depth > 0) return stringText(r, 3)[0];
  const levels = 1 + r.int(128);
  let open = ''; let close = '';
  for (let k = 0; k < levels; ++k) {
    if (r.chance(0.5)) { open += '['; close = ']' + close; } else { open += '{"k":'; close = '}' + close; }
  }
  return open + numberText(r) + close;
}

// --- the comparison ---

function reference (text) {
  try {
    return canonicalize(JSON.parse(text));
  } catch (e) {
    return null; // refused: a lone surrogate, or a number out of range
  }
}

function startTool () {
  const child = spawn(tool, [], { stdio: ['pipe', 'pipe', 'inherit'] });
  let pending = Buffer.alloc(0);
  let waiting = null;
  const lines = [];
  child.stdout.on('data', (chunk) => {
    pending = Buffer.concat([pending, chunk]);
    for (let nl = pending.indexOf(10); nl >= 0; nl = pending.indexOf(10)) {
      lines.push(pending.subarray(0, nl));
      pending = pending.subarray(nl + 1);
    }
    if (waiting && lines.length >= waiting.n) { const w = waiting; waiting = null; w.resolve(lines.splice(0, w.n)); }
  });
  child.on('exit', (code) => { if (waiting) waiting.reject(new Error(`canon_tool exited (${code}) mid-batch`)); });
  return {
    ask (texts) {
      return new Promise((resolve, reject) => {
        waiting = { n: texts.length, resolve, reject };
        child.stdin.write(texts.join('\n') + '\n');
      });
    },
    end () { child.stdin.end(); }
  };
}

const shown = (b) => (b.length > 400 ? `${b.subarray(0, 400)}… (${b.length} bytes)` : b.toString());

async function round (airlock, seed) {
  const r = rng(seed);
  const stats = { compared: 0, differences: 0, refusedBoth: 0 };
  for (let done = 0; done < count;) {
    const texts = [];
    for (; texts.length < 500 && done + texts.length < count;) {
      budget = valueBudget;
      texts.push(valueText(r, 0));
    }
    const answers = await airlock.ask(texts);
    texts.forEach((text, k) => {
      const expected = reference(text);
      const got = answers[k];
      const refused = got.length > 0 && got[0] === 0x21; // '!'
      stats.compared += 1;
      if (expected === null && refused) { stats.refusedBoth += 1; return; }
      if (expected !== null && Buffer.from(expected, 'utf8').equals(got)) return;
      stats.differences += 1;
      if (stats.differences <= 20) {
        console.log(`DIFFERENCE (seed ${seed}, value ${done + k + 1})\n  input:         ${text}\n` +
          `  canonicalize:  ${expected === null ? '(refused)' : expected}\n  airlock:       ${shown(got)}`);
      }
    });
    done += texts.length;
  }
  return stats;
}

const started = process.hrtime.bigint();
const airlock = startTool();
let failed = false;
for (const seed of seeds) {
  const begun = process.hrtime.bigint();
  const s = await round(airlock, seed);
  const seconds = Number(process.hrtime.bigint() - begun) / 1e9;
  console.log(`seed ${seed}: ${s.compared} values compared, ${s.differences} differences, ` +
    `${s.refusedBoth} refused by both, ${seconds.toFixed(1)} s (${Math.round(s.compared / seconds)} values/s)`);
  if (s.differences) failed = true;
}
airlock.end();
console.log(`elapsed ${(Number(process.hrtime.bigint() - started) / 1e9).toFixed(1)} s` +
  (failed ? '; replay with --seed SEED' : ''));
process.exit(failed ? 1 : 0);
