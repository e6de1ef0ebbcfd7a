#!/usr/bin/env node
// compare.mjs: runs an ONNX model with ONNX Runtime (CPU) and with the kiln CLI
// on the same input, prints per output the max relative error
// (max|kiln - ort| / max|ort|) and the latency of both, and exits non-zero
// when an output differs by more than --tol (integer outputs: at all).
//
// Usage: node compare.mjs MODEL.onnx [--input NAME=FILE.npy ...] [--kiln PATH]
//          [--repeat N] [--rounds R] [--threads T] [--tol X] [--work DIR]
//          [--device SEL] [--precision fp32|fp16|auto] [--kiln-arg ARG ...] [--timeout S] [--ort-only] [--json FILE]
//
// --precision P runs kiln with `--precision P` (device storage of float
// tensors; the error is still against ORT's fp32 outputs) and prints the
// plan's precision and device_bytes from kiln's --json.
// Inputs not given with --input are drawn from a seeded normal distribution
// (float inputs with static shapes only) and written to WORK/inputs/.
// Latency: R rounds alternate ONNX Runtime (N timed runs after a warm-up) and
// one `kiln run ... --repeat N --json` call; ORT reports the median and minimum
// of all its runs, kiln the median of its per-call medians and the minimum of
// its minimums. Exit status: 0 all outputs match, 1 a mismatch or kiln
// failure, 2 a usage or setup error.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);

// ---- .npy files --------------------------------------------------------

const NPY_TYPES = {
  '<f4': { type: 'float32', Arr: Float32Array },
  '<f8': { type: 'float64', Arr: Float64Array },
  '<i8': { type: 'int64', Arr: BigInt64Array },
  '<i4': { type: 'int32', Arr: Int32Array },
  '<i2': { type: 'int16', Arr: Int16Array },
  '|i1': { type: 'int8', Arr: Int8Array },
  '|u1': { type: 'uint8', Arr: Uint8Array },
  '|b1': { type: 'bool', Arr: Uint8Array },
  '<u8': { type: 'uint64', Arr: BigUint64Array },
  '<u4': { type: 'uint32', Arr: Uint32Array },
  '<u2': { type: 'uint16', Arr: Uint16Array },
};
const DESCR_OF = Object.fromEntries(Object.entries(NPY_TYPES).map(([d, t]) => [t.type, d]));

/** Reads a little-endian C-order .npy file: { type, dims, data }. */
export function readNpy(file) {
  const buf = fs.readFileSync(file);
  if (buf.length < 10 || buf.readUInt8(0) !== 0x93 || buf.toString('latin1', 1, 6) !== 'NUMPY')
    throw new Error(`${file}: not a .npy file`);
  const major = buf.readUInt8(6);
  const hlen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const hstart = major === 1 ? 10 : 12;
  const header = buf.toString('latin1', hstart, hstart + hlen);
  const descr = /'descr'\s*:\s*'([^']+)'/.exec(header)?.[1];
  const fortran = /'fortran_order'\s*:\s*(True|False)/.exec(header)?.[1];
  const shapeStr = /'shape'\s*:\s*\(([^)]*)\)/.exec(header)?.[1];
  if (!descr || !fortran || shapeStr === undefined) throw new Error(`${file}: malformed .npy header: ${header}`);
  if (fortran === 'True') throw new Error(`${file}: Fortran-order arrays are not supported`);
  const t = NPY_TYPES[descr];
  if (!t) throw new Error(`${file}: unsupported dtype '${descr}'`);
  const dims = shapeStr.split(',').map((s) => s.trim()).filter((s) => s).map(Number);
  const n = dims.reduce((a, b) => a * b, 1);
  const off = hstart + hlen;
  const bytes = n * t.Arr.BYTES_PER_ELEMENT;
  if (buf.length < off + bytes) throw new Error(`${file}: truncated (${buf.length - off} of ${bytes} data bytes)`);
  const data = new t.Arr(n);
  Buffer.from(data.buffer).set(buf.subarray(off, off + bytes));
  return { type: t.type, dims, data };
}

/** Writes { type, dims, data } as a version 1.0 .npy file. */
export function writeNpy(file, { type, dims, data }) {
  const descr = DESCR_OF[type];
  if (!descr) throw new Error(`${file}: cannot write dtype ${type}`);
  const shape = dims.length === 1 ? `(${dims[0]},)` : `(${dims.join(', ')})`;
  let header = `{'descr': '${descr}', 'fortran_order': False, 'shape': ${shape}, }`;
  const pad = 64 - ((10 + header.length + 1) % 64);
  header += ' '.repeat(pad % 64) + '\n';
  const pre = Buffer.alloc(10);
  pre.writeUInt8(0x93, 0);
  pre.write('NUMPY', 1, 'latin1');
  pre.writeUInt8(1, 6);
  pre.writeUInt8(0, 7);
  pre.writeUInt16LE(header.length, 8);
  const body = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  fs.writeFileSync(file, Buffer.concat([pre, Buffer.from(header, 'latin1'), body]));
}

// ---- helpers -----------------------------------------------------------

/** The file name kiln gives an output: non [A-Za-z0-9_.-] characters become '_'. */
export const sanitize = (name) => name.replace(/[^A-Za-z0-9_.-]/g, '_');

export function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/** splitmix64 + Box-Muller: deterministic N(0,1) samples. */
export function normalRng(seed) {
  let s = BigInt.asUintN(64, BigInt(seed));
  const next = () => {
    s = BigInt.asUintN(64, s + 0x9e3779b97f4a7c15n);
    let z = s;
    z = BigInt.asUintN(64, (z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n);
    z = BigInt.asUintN(64, (z ^ (z >> 27n)) * 0x94d049bb133111ebn);
    z ^= z >> 31n;
    return (Number(z >> 11n) + 0.5) / 9007199254740992;
  };
  return () => Math.sqrt(-2 * Math.log(next())) * Math.cos(2 * Math.PI * next());
}

/** Max |a-b| / max |b| over two numeric arrays; NaN anywhere gives Infinity. */
export function relError(a, b) {
  let maxd = 0;
  let maxb = 0;
  for (let i = 0; i < b.length; i++) {
    const x = Number(a[i]);
    const y = Number(b[i]);
    if (Number.isNaN(x) !== Number.isNaN(y)) return { rel: Infinity, maxd: Infinity, maxb };
    if (Number.isNaN(y)) continue;
    const d = Math.abs(x - y);
    if (d > maxd || Number.isNaN(d)) maxd = Number.isNaN(d) ? Infinity : d;
    if (Math.abs(y) > maxb) maxb = Math.abs(y);
  }
  return { rel: maxb > 0 ? maxd / maxb : maxd, maxd, maxb };
}

function usage(msg) {
  if (msg) console.error(`compare.mjs: ${msg}`);
  console.error('usage: node compare.mjs MODEL.onnx [--input NAME=FILE.npy ...] [--kiln PATH] [--repeat N] [--rounds R]\n' +
    '         [--threads T] [--tol X] [--work DIR] [--device SEL] [--precision P] [--kiln-arg ARG ...] [--timeout S] [--ort-only] [--json FILE]');
  process.exit(2);
}

function parseArgs(argv) {
  const a = { inputs: [], kiln: './build/kiln', repeat: 10, rounds: 3, threads: 2, tol: 1e-3, work: null,
    device: null, kilnArgs: [], timeout: 600, ortOnly: false, json: null, seed: 1, model: null };
  for (let i = 0; i < argv.length; i++) {
    const k = argv[i];
    const val = () => (i + 1 < argv.length ? argv[++i] : usage(`${k} needs a value`));
    const num = () => { const v = Number(val()); if (!Number.isFinite(v) || v < 0) usage(`${k}: not a number`); return v; };
    if (k === '--input') a.inputs.push(val());
    else if (k === '--kiln') a.kiln = val();
    else if (k === '--repeat') a.repeat = Math.max(1, Math.floor(num()));
    else if (k === '--rounds') a.rounds = Math.max(1, Math.floor(num()));
    else if (k === '--threads') a.threads = Math.max(1, Math.floor(num()));
    else if (k === '--tol') a.tol = num();
    else if (k === '--work') a.work = val();
    else if (k === '--device') a.device = val();
    else if (k === '--kiln-arg') a.kilnArgs.push(val());
    else if (k === '--precision') {
      const p = val();
      if (!['fp32', 'fp16', 'auto'].includes(p)) usage(`--precision: fp32, fp16 or auto, not ${p}`);
      a.kilnArgs.push('--precision', p);
    }
    else if (k === '--timeout') a.timeout = num();
    else if (k === '--seed') a.seed = Math.floor(num());
    else if (k === '--ort-only') a.ortOnly = true;
    else if (k === '--json') a.json = val();
    else if (k === '-h' || k === '--help') usage();
    else if (k.startsWith('--')) usage(`unknown option ${k}`);
    else if (!a.model) a.model = k;
    else usage(`unexpected argument ${k}`);
  }
  if (!a.model) usage('no model given');
  return a;
}

// ---- main --------------------------------------------------------------

async function main() {
  const a = parseArgs(process.argv.slice(2));
  let ort;
  try {
    ort = require('onnxruntime-node');
  } catch (e) {
    console.error(`compare.mjs: onnxruntime-node is not installed (run bench/models/setup.sh): ${e.message}`);
    return 2;
  }
  if (!fs.existsSync(a.model)) { console.error(`compare.mjs: ${a.model}: no such model`); return 2; }
  const modelName = path.basename(a.model, '.onnx');
  const work = a.work || fs.mkdtempSync(path.join(os.tmpdir(), `kiln-cmp-${modelName}-`));
  for (const d of ['inputs', 'ort', 'kiln']) fs.mkdirSync(path.join(work, d), { recursive: true });

  const session = await ort.InferenceSession.create(a.model, {
    intraOpNumThreads: a.threads, interOpNumThreads: 1, executionMode: 'sequential', graphOptimizationLevel: 'all',
  });

  // inputs: given .npy files, or seeded random ones
  const given = new Map();
  for (const spec of a.inputs) {
    const eq = spec.indexOf('=');
    if (eq <= 0) usage(`--input wants NAME=FILE.npy, got '${spec}'`);
    given.set(spec.slice(0, eq), spec.slice(eq + 1));
  }
  for (const n of given.keys()) if (!session.inputNames.includes(n)) usage(`model has no input '${n}' (inputs: ${session.inputNames.join(', ')})`);
  const feeds = {};
  const inputFiles = [];
  const rng = normalRng(a.seed);
  for (const [i, name] of session.inputNames.entries()) {
    let file = given.get(name);
    let t;
    if (file) {
      t = readNpy(file);
    } else {
      const meta = session.inputMetadata?.[i];
      if (!meta || meta.type !== 'float32' || !meta.shape?.every((d) => typeof d === 'number' && d > 0)) {
        console.error(`compare.mjs: input '${name}' is not float32 with a static shape; give it with --input ${name}=FILE.npy`);
        return 2;
      }
      const n = meta.shape.reduce((x, y) => x * y, 1);
      const data = new Float32Array(n);
      for (let k = 0; k < n; k++) data[k] = rng();
      t = { type: 'float32', dims: meta.shape, data };
      file = path.join(work, 'inputs', `${sanitize(name)}.npy`);
      writeNpy(file, t);
    }
    feeds[name] = new ort.Tensor(t.type, t.data, t.dims);
    inputFiles.push(`${name}=${path.resolve(file)}`);
  }

  // ORT outputs (also written as .npy for inspection) and warm-up
  const ref = await session.run(feeds);
  await session.run(feeds);
  for (const name of session.outputNames) {
    const o = ref[name];
    if (DESCR_OF[o.type]) writeNpy(path.join(work, 'ort', `${sanitize(name)}.npy`), { type: o.type, dims: o.dims, data: o.data });
  }

  const ortTimes = [];
  const kilnMedians = [];
  const kilnMins = [];
  const kilnDir = path.join(work, 'kiln');
  const kilnCmd = ['run', path.resolve(a.model), ...inputFiles.flatMap((s) => ['--input', s]), '--output-dir', kilnDir,
    '--repeat', String(a.repeat), '--json', ...(a.device ? ['--device', a.device] : []), ...a.kilnArgs];
  let kilnFailed = null;
  let kilnJson = null;
  for (let r = 0; r < a.rounds; r++) {
    for (let k = 0; k < a.repeat; k++) {
      const t0 = process.hrtime.bigint();
      await session.run(feeds);
      ortTimes.push(Number(process.hrtime.bigint() - t0) / 1e6);
    }
    if (a.ortOnly || kilnFailed) continue;
    const p = spawnSync(a.kiln, kilnCmd, { encoding: 'utf8', timeout: a.timeout * 1000, maxBuffer: 64 << 20 });
    if (p.error || p.status !== 0) {
      kilnFailed = p.error ? `${a.kiln}: ${p.error.message}` : `kiln exited with status ${p.status ?? p.signal}: ${(p.stderr || '').trim().split('\n').slice(-5).join('\n')}`;
      continue;
    }
    try {
      const line = p.stdout.trim().split('\n').filter((l) => l.trim().startsWith('{')).pop();
      kilnJson = JSON.parse(line ?? p.stdout);
    } catch (e) {
      kilnFailed = `kiln --json printed no JSON object: ${p.stdout.slice(0, 300)}`;
      continue;
    }
    const lat = kilnJson.latency_ms || {};
    if (typeof lat.median === 'number') kilnMedians.push(lat.median);
    if (typeof lat.min === 'number') kilnMins.push(lat.min);
  }

  // compare outputs
  const rows = [];
  let bad = 0;
  for (const name of session.outputNames) {
    const o = ref[name];
    const row = { name, dims: o.dims, rel: null, status: 'skipped' };
    rows.push(row);
    if (a.ortOnly) continue;
    if (kilnFailed) { row.status = 'kiln failed'; bad++; continue; }
    const file = path.join(kilnDir, `${sanitize(name)}.npy`);
    if (!fs.existsSync(file)) { row.status = `missing ${file}`; bad++; continue; }
    const k = readNpy(file);
    if (k.dims.length !== o.dims.length || k.dims.some((d, i) => d !== o.dims[i])) {
      row.status = `shape [${k.dims}] != ORT [${o.dims}]`; bad++; continue;
    }
    const e = relError(k.data, o.data);
    row.rel = e.rel; row.maxAbs = e.maxd; row.maxRef = e.maxb;
    // integer outputs (indices, tokens) must be equal, not close
    const exact = /int|bool/.test(o.type);
    const good = exact ? e.maxd === 0 : e.rel <= a.tol;
    row.status = good ? 'ok' : exact ? `FAIL (integers differ by up to ${e.maxd})` : `FAIL (> ${a.tol})`;
    if (!good) bad++;
  }

  const fmt = (x) => (x == null ? '-' : x === Infinity ? 'inf' : x !== 0 && Math.abs(x) < 1e-2 ? x.toExponential(2) : x.toPrecision(3));
  const ortMed = median(ortTimes);
  const ortMin = Math.min(...ortTimes);
  const kMed = kilnMedians.length ? median(kilnMedians) : null;
  const kMin = kilnMins.length ? Math.min(...kilnMins) : null;
  console.log(`${modelName}: ${session.inputNames.map((n) => `${n} [${feeds[n].dims}]`).join(', ')}`);
  for (const r of rows) console.log(`  ${r.name.padEnd(24)} [${r.dims}]`.padEnd(44) + `  max rel err ${fmt(r.rel).padEnd(8)}  ${r.status}`);
  console.log(`  latency ms (median of ${a.rounds}x${a.repeat}, threads ${a.threads}): ORT ${fmt(ortMed)} (min ${fmt(ortMin)})` +
    (a.ortOnly ? '' : `  kiln ${fmt(kMed)} (min ${fmt(kMin)})  kiln/ORT ${kMed != null ? (kMed / ortMed).toFixed(2) : '-'}`));
  if (kilnJson && kilnJson.precision) console.log(`  kiln precision ${kilnJson.precision}, device_bytes ${kilnJson.device_bytes}`);
  if (kilnFailed) console.log(`  kiln failed: ${kilnFailed}`);
  if (a.json) {
    fs.writeFileSync(a.json, JSON.stringify({ model: a.model, threads: a.threads, tol: a.tol, outputs: rows,
      ort_ms: { median: ortMed, min: ortMin }, kiln_ms: kMed != null ? { median: kMed, min: kMin } : null,
      ratio: kMed != null ? kMed / ortMed : null, kiln_error: kilnFailed, kiln: kilnJson }, null, 2) + '\n');
  }
  if (!a.work && !kilnFailed && !bad) fs.rmSync(work, { recursive: true, force: true });
  else if (!a.work) console.log(`  files kept in ${work}`);
  return bad || kilnFailed ? 1 : 0;
}

// Run only as a script: bench_all.mjs imports the helpers above.
const realpath = (f) => { try { return fs.realpathSync(f); } catch { return path.resolve(f); } };
if (process.argv[1] && realpath(process.argv[1]) === realpath(fileURLToPath(import.meta.url))) {
  main().then((rc) => process.exit(rc), (e) => { console.error(`compare.mjs: ${e.stack || e}`); process.exit(2); });
}
