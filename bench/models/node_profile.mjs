#!/usr/bin/env node
// node_profile.mjs: where a model's time goes in kiln against ONNX Runtime,
// node by node. ORT runs the model with its profiler on (N runs after 2
// untimed ones; the median of each node's kernel time); kiln runs
// `kiln bench --profile --json` (N runs, the median of each fused kernel's
// device time, named by its last node); the two are joined by node name (ORT
// names a kernel by its output, kiln by its last node: both end in the name
// of the node that produces the value) and printed by kiln's excess, with
// the totals and the unmatched nodes of each (fused differently: ORT folds a
// residual Add into the Conv before it, kiln into its epilogue).
//
// Both run in this process's turn, one after the other, not interleaved:
// a per-node comparison on a quiet machine, not a ratio to report (that is
// bench_all.mjs). ORT's profiler slows ORT down, by 4-12% here (bert_encoder
// 22.7 vs 21.9 ms, squeezenet1_1 1.81 vs 1.63), and once, in a session
// opened right after another's release, by 2x: its run time with and
// without the profiler is printed; compare nodes only when they agree.
//
// Usage: node node_profile.mjs MODEL.onnx [--kiln PATH] [--db FILE] [--runs N] [--threads T] [--top K] [--json FILE]
// Exit status: 0, or 2 on a usage or setup error.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { median, normalRng } from './compare.mjs';

const require = createRequire(import.meta.url);
const here = path.dirname(fileURLToPath(import.meta.url));

function parseArgs(argv) {
  const a = { model: null, kiln: path.join(here, '..', '..', 'build', 'kiln'), db: null, runs: 20, threads: 2, top: 30, json: null, seed: 1 };
  for (let i = 0; i < argv.length; i++) {
    const k = argv[i], v = () => { if (i + 1 >= argv.length) throw new Error(`${k} needs a value`); return argv[++i]; };
    if (k === '--kiln') a.kiln = v();
    else if (k === '--db') a.db = v();
    else if (k === '--runs') a.runs = +v();
    else if (k === '--threads') a.threads = +v();
    else if (k === '--top') a.top = +v();
    else if (k === '--json') a.json = v();
    else if (k === '-h' || k === '--help') { a.help = true; }
    else if (k.startsWith('--')) throw new Error(`unknown option ${k}`);
    else a.model = k;
  }
  if (!a.help && !a.model) throw new Error('no model given');
  if (!(a.runs >= 1)) throw new Error('--runs must be at least 1');
  return a;
}

// ORT: node name -> median kernel time (us) over the timed runs
async function ortProfile(ort, a) {
  const prefix = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'kiln-nodeprof-')), 'ort');
  const session = await ort.InferenceSession.create(a.model, {
    intraOpNumThreads: a.threads, interOpNumThreads: 1, executionMode: 'sequential', graphOptimizationLevel: 'all',
  });
  const rng = normalRng(a.seed), feeds = {};
  for (const [i, name] of session.inputNames.entries()) {
    const meta = session.inputMetadata?.[i];
    if (!meta || !meta.shape?.every((d) => typeof d === 'number' && d > 0)) throw new Error(`input '${name}' has no static shape`);
    const n = meta.shape.reduce((x, y) => x * y, 1);
    if (meta.type === 'float32') feeds[name] = new ort.Tensor('float32', Float32Array.from({ length: n }, () => rng()), meta.shape);
    else if (meta.type === 'int64') feeds[name] = new ort.Tensor('int64', BigInt64Array.from({ length: n }, () => BigInt(Math.floor(Math.abs(rng()) * 1e6) % 1000)), meta.shape);
    else throw new Error(`input '${name}': type ${meta.type} not handled here`);
  }
  for (let i = 0; i < 2; i++) await session.run(feeds);
  const plain = [];
  for (let i = 0; i < a.runs; i++) {
    const t0 = process.hrtime.bigint();
    await session.run(feeds);
    plain.push(Number(process.hrtime.bigint() - t0) / 1e3);
  }
  await session.release();
  // a second session with the profiler: its first runs are the warm-up above's cost again, dropped below
  const prof = await ort.InferenceSession.create(a.model, {
    intraOpNumThreads: a.threads, interOpNumThreads: 1, executionMode: 'sequential', graphOptimizationLevel: 'all',
    enableProfiling: true, profileFilePrefix: prefix,
  });
  const warm = 2;
  for (let i = 0; i < warm + a.runs; i++) await prof.run(feeds);
  prof.endProfiling();
  await prof.release();
  const dir = path.dirname(prefix), file = fs.readdirSync(dir).find((f) => f.startsWith('ort') && f.endsWith('.json'));
  if (!file) throw new Error('ONNX Runtime wrote no profile');
  const events = JSON.parse(fs.readFileSync(path.join(dir, file), 'utf8'));
  fs.rmSync(dir, { recursive: true, force: true });
  const per = new Map(), runs = [];
  for (const e of events) {
    if (e.cat === 'Session' && e.name === 'model_run') runs.push(e.dur);
    if (e.cat !== 'Node' || !e.name.endsWith('_kernel_time')) continue;
    // ORT names a kernel after its output value (the NCHWc ones with a suffix)
    const node = e.name.slice(0, -'_kernel_time'.length).replace(/_nchwc$/, '').replace(/_output_0$/, '');
    if (!per.has(node)) per.set(node, { op: e.args?.op_name ?? '?', t: [] });
    per.get(node).t.push(e.dur);
  }
  const nodes = new Map();
  for (const [k, v] of per) nodes.set(k, { op: v.op, us: median(v.t.slice(warm)) });
  return { run_us: median(runs.slice(warm)), plain_us: median(plain), nodes };
}

function kilnProfile(a) {
  const args = ['bench', a.model, '--repeat', String(a.runs), '--warmup', '3', '--profile', '--json'];
  if (a.db) args.push('--db', a.db);
  const r = spawnSync(a.kiln, args, { encoding: 'utf8', maxBuffer: 64 << 20 });
  if (r.status !== 0) throw new Error(`kiln bench failed (${r.status}): ${(r.stderr || '').trim().split('\n').pop()}`);
  const j = JSON.parse(r.stdout);
  const nodes = new Map();
  for (const n of j.profile.nodes) nodes.set(n.node, { op: n.op, us: n.median_us });
  return { run_us: j.latency_ms.median * 1e3, busy_us: j.profile.busy_ms * 1e3, tuning: j.tuning, nodes };
}

async function main() {
  let a;
  try { a = parseArgs(process.argv.slice(2)); } catch (e) { console.error(`node_profile.mjs: ${e.message}`); return 2; }
  if (a.help) { console.log(fs.readFileSync(fileURLToPath(import.meta.url), 'utf8').split('\n').filter((l) => l.startsWith('//')).map((l) => l.slice(3)).join('\n')); return 0; }
  let ort;
  try { ort = require('onnxruntime-node'); } catch (e) {
    console.error(`node_profile.mjs: onnxruntime-node is not installed (run bench/models/setup.sh): ${e.message}`);
    return 2;
  }
  if (!fs.existsSync(a.model)) { console.error(`node_profile.mjs: ${a.model}: no such file`); return 2; }
  if (!fs.existsSync(a.kiln)) { console.error(`node_profile.mjs: ${a.kiln}: no kiln binary (--kiln PATH)`); return 2; }
  let o, k;
  try { o = await ortProfile(ort, a); k = kilnProfile(a); } catch (e) { console.error(`node_profile.mjs: ${e.message}`); return 2; }
  const rows = [];
  let km = 0, om = 0;
  for (const [name, kv] of k.nodes) {
    const ov = o.nodes.get(name);
    if (ov) { km += kv.us; om += ov.us; }
    rows.push({ node: name, op: kv.op, kiln_us: kv.us, ort_us: ov ? ov.us : null, excess_us: kv.us - (ov ? ov.us : 0) });
  }
  const onlyOrt = [...o.nodes].filter(([n]) => !k.nodes.has(n)).map(([n, v]) => ({ node: n, op: v.op, ort_us: v.us })).sort((x, y) => y.ort_us - x.ort_us);
  const sum = (m) => [...m.values()].reduce((s, v) => s + v.us, 0);
  console.log(`${path.basename(a.model)}: ${a.runs} runs each, ORT ${a.threads} threads (profiler on)`);
  console.log(`  kiln: median run ${(k.run_us / 1e3).toFixed(3)} ms, device busy ${(k.busy_us / 1e3).toFixed(3)} ms, ${k.nodes.size} kernels; ${k.tuning ? JSON.stringify(k.tuning).slice(0, 120) : ''}`);
  console.log(`  ORT:  median run ${(o.run_us / 1e3).toFixed(3)} ms profiled (${(o.plain_us / 1e3).toFixed(3)} ms without the profiler), kernels ${(sum(o.nodes) / 1e3).toFixed(3)} ms, ${o.nodes.size} kernels`);
  console.log(`  matched by name: kiln ${(km / 1e3).toFixed(3)} ms vs ORT ${(om / 1e3).toFixed(3)} ms (x${(km / Math.max(om, 1)).toFixed(2)})`);
  console.log(`  ORT only (fused otherwise in kiln): ${(onlyOrt.reduce((s, r) => s + r.ort_us, 0) / 1e3).toFixed(3)} ms in ${onlyOrt.length}`);
  console.log('  kiln us    ORT us   excess  op / node (by kiln\'s excess)');
  for (const r of rows.sort((x, y) => y.excess_us - x.excess_us).slice(0, a.top))
    console.log(`${r.kiln_us.toFixed(1).padStart(9)} ${(r.ort_us === null ? '-' : r.ort_us.toFixed(1)).padStart(9)} ${r.excess_us.toFixed(1).padStart(8)}  ${r.op} ${r.node}`);
  if (a.json) fs.writeFileSync(a.json, JSON.stringify({ model: a.model, runs: a.runs, kiln: { run_us: k.run_us, busy_us: k.busy_us, tuning: k.tuning }, ort: { run_us: o.run_us }, nodes: rows, ort_only: onlyOrt }, null, 2) + '\n');
  return 0;
}

main().then((c) => process.exit(c), (e) => { console.error(`node_profile.mjs: ${e.stack || e}`); process.exit(2); });
