#!/usr/bin/env node
// bench_all.mjs: kiln against ONNX Runtime CPU and PyTorch on several models
// (default: the six of export.py's BENCH list). For each model: one seeded
// input; optionally `kiln tune` into the database first (--tune SECONDS,
// resumable); then R rounds, each running ONNX Runtime (N timed runs, in this
// process, whose session has run twice before and stays open across rounds),
// kiln (`kiln run --db F --repeat W+N+1 --json` in a fresh process: its median
// over the last N runs; the first run plans and compiles, the W warm-up runs
// after it (--warmup, default 5) cover the fresh process's slow start: on POCL
// the runs in its first ~50 ms take up to 1.6x the steady time) and PyTorch (N timed runs in a
// persistent torch_runner.py process), in an order that rotates every round.
// Prints per model the median latencies, the kiln/ORT and kiln/PyTorch ratios
// and each framework's output agreement with ONNX Runtime
// (max|x - ort| / max|ort|), and writes everything to a JSON file.
//
// The database defaults to DIR/tuning.db; when it does not exist and --tune
// is 0, kiln runs with its default parameters.
//
// Usage: node bench_all.mjs [--models a,b|bench] [--dir DIR] [--kiln PATH] [--db FILE] [--tune SECONDS]
//          [--repeat N] [--warmup W] [--rounds R] [--threads T] [--tol X] [--json FILE] [--no-torch]
//          [--device SEL] [--timeout S] [--work DIR]
// Exit status: 0 every model ran in kiln within --tol of ONNX Runtime; 1 a
// mismatch or a kiln failure; 2 a usage or setup error.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { median, normalRng, readNpy, relError, sanitize, writeNpy } from './compare.mjs';

const require = createRequire(import.meta.url);
const here = path.dirname(fileURLToPath(import.meta.url));
const BENCH = 'resnet18,mobilenet_v2,squeezenet1_1,vae_decoder_16,vae_decoder_32,bert_encoder';
const PY = '/usr/bin/python3';

function usage(msg) {
  if (msg) console.error(`bench_all.mjs: ${msg}`);
  console.error('usage: node bench_all.mjs [--models a,b|bench] [--dir DIR] [--kiln PATH] [--db FILE] [--tune SECONDS]\n' +
    '         [--repeat N] [--warmup W] [--rounds R] [--threads T] [--tol X] [--json FILE] [--no-torch] [--device SEL] [--timeout S] [--work DIR]');
  process.exit(2);
}

function parseArgs(argv) {
  const a = { models: BENCH, dir: path.join(here, 'out'), kiln: path.resolve(here, '../../build/kiln'), db: null, tune: 0,
    repeat: 3, warmup: 5, rounds: 3, threads: 2, tol: 1e-3, json: null, torch: true, device: null, timeout: 900, work: null, seed: 1 };
  for (let i = 0; i < argv.length; i++) {
    const k = argv[i];
    const val = () => (i + 1 < argv.length ? argv[++i] : usage(`${k} needs a value`));
    const num = () => { const v = Number(val()); if (!Number.isFinite(v) || v < 0) usage(`${k}: not a non-negative number`); return v; };
    if (k === '--models') a.models = val();
    else if (k === '--dir') a.dir = val();
    else if (k === '--kiln') a.kiln = val();
    else if (k === '--db') a.db = val();
    else if (k === '--tune') a.tune = num();
    else if (k === '--repeat') a.repeat = Math.max(1, Math.floor(num()));
    else if (k === '--warmup') a.warmup = Math.max(0, Math.floor(num()));
    else if (k === '--rounds') a.rounds = Math.max(1, Math.floor(num()));
    else if (k === '--threads') a.threads = Math.max(1, Math.floor(num()));
    else if (k === '--tol') a.tol = num();
    else if (k === '--json') a.json = val();
    else if (k === '--no-torch') a.torch = false;
    else if (k === '--device') a.device = val();
    else if (k === '--timeout') a.timeout = num();
    else if (k === '--work') a.work = val();
    else if (k === '--seed') a.seed = Math.floor(num());
    else if (k === '-h' || k === '--help') usage();
    else usage(`unknown argument ${k}`);
  }
  if (a.models === 'bench') a.models = BENCH;
  a.db = path.resolve(a.db ?? path.join(a.dir, 'tuning.db'));
  a.json = path.resolve(a.json ?? path.join(a.dir, 'bench_all.json'));
  return a;
}

// ---- PyTorch: a persistent torch_runner.py process ----------------------

/** Starts torch_runner.py; resolves to { request(n) -> ms[], close(), info } or { error }. */
function startTorch(model, inputFile, outputFile, threads) {
  return new Promise((resolve) => {
    const p = spawn(PY, [path.join(here, 'torch_runner.py'), '--model', model, '--input', inputFile, '--output', outputFile,
      '--threads', String(threads)], { stdio: ['pipe', 'pipe', 'pipe'] });
    let buf = '';
    let stderr = '';
    const waiting = [];
    const lines = [];
    const deliver = () => { while (waiting.length && lines.length) waiting.shift()(lines.shift()); };
    p.stdout.on('data', (d) => {
      buf += d;
      let nl;
      while ((nl = buf.indexOf('\n')) >= 0) { lines.push(buf.slice(0, nl)); buf = buf.slice(nl + 1); }
      deliver();
    });
    p.stderr.on('data', (d) => { stderr += d; });
    const nextLine = () => new Promise((res) => { waiting.push(res); deliver(); });
    p.on('exit', (code) => { while (waiting.length) waiting.shift()(JSON.stringify({ error: `torch_runner exited (${code}): ${stderr.trim().split('\n').slice(-3).join(' | ')}` })); });
    p.on('error', (e) => { while (waiting.length) waiting.shift()(JSON.stringify({ error: `${PY}: ${e.message}` })); });
    nextLine().then((l) => {
      let m;
      try { m = JSON.parse(l); } catch { m = { error: `torch_runner: ${l}` }; }
      if (m.error) { p.kill(); resolve({ error: m.error }); return; }
      resolve({
        info: m,
        async request(n) {
          p.stdin.write(`run ${n}\n`);
          const r = JSON.parse(await nextLine());
          if (r.error) throw new Error(r.error);
          return r.ms;
        },
        close() { try { p.stdin.end('quit\n'); } catch { /* already gone */ } },
      });
    });
  });
}

// ---- one model ------------------------------------------------------------

async function benchModel(ort, a, name, work) {
  const model = path.join(a.dir, `${name}.onnx`);
  const res = { model: name, file: model, inputs: [], ort_ms: null, kiln_ms: null, torch_ms: null, ratio_ort: null, ratio_torch: null,
    outputs: [], kiln_error: null, torch_error: null, tuning: null, ok: false };
  if (!fs.existsSync(model)) { res.kiln_error = `${model}: no such model (run export.py --models ${name})`; return res; }
  const session = await ort.InferenceSession.create(model, {
    intraOpNumThreads: a.threads, interOpNumThreads: 1, executionMode: 'sequential', graphOptimizationLevel: 'all',
  });
  const dir = path.join(work, sanitize(name));
  for (const d of ['inputs', 'ort', 'kiln', 'torch']) fs.mkdirSync(path.join(dir, d), { recursive: true });

  // seeded inputs: N(0,1) floats; integers (token ids) uniform in [0, 1000)
  const rng = normalRng(a.seed);
  const feeds = {};
  const inputArgs = [];
  let firstInput = null;
  for (const [i, iname] of session.inputNames.entries()) {
    const meta = session.inputMetadata?.[i];
    if (!meta || !meta.shape?.every((d) => typeof d === 'number' && d > 0)) throw new Error(`${name}: input '${iname}' has no static shape`);
    const n = meta.shape.reduce((x, y) => x * y, 1);
    let t;
    if (meta.type === 'float32') t = { type: 'float32', dims: meta.shape, data: Float32Array.from({ length: n }, () => rng()) };
    else if (meta.type === 'int64') t = { type: 'int64', dims: meta.shape, data: BigInt64Array.from({ length: n }, () => BigInt(Math.floor(Math.abs(rng()) * 1e6) % 1000)) };
    else throw new Error(`${name}: input '${iname}' has type ${meta.type} (float32 and int64 are supported)`);
    const file = path.join(dir, 'inputs', `${sanitize(iname)}.npy`);
    writeNpy(file, t);
    feeds[iname] = new ort.Tensor(t.type, t.data, t.dims);
    inputArgs.push('--input', `${iname}=${file}`);
    res.inputs.push({ name: iname, type: t.type, dims: t.dims });
    firstInput ??= file;
  }
  const ref = await session.run(feeds);
  await session.run(feeds);

  const dev = a.device ? ['--device', a.device] : [];
  if (a.tune > 0) {
    const t0 = Date.now();
    const p = spawnSync(a.kiln, ['tune', model, '--db', a.db, '--budget', String(a.tune), '--json', ...inputArgs, ...dev],
      { encoding: 'utf8', timeout: (a.tune * 3 + 600) * 1000, maxBuffer: 64 << 20 });
    fs.writeFileSync(path.join(dir, 'tune.log'), `${p.stdout ?? ''}\n${p.stderr ?? ''}`);
    const tuneLine = (p.stdout || '').trim().split('\n').filter((l) => l.startsWith('{')).pop();
    let tj = null;
    try { tj = tuneLine ? JSON.parse(tuneLine) : null; } catch { /* reported below */ }
    res.tune = { seconds: (Date.now() - t0) / 1e3, status: p.status, instances: tj?.instances?.length ?? null,
      error: p.status === 0 ? null : (p.stderr || '').trim().split('\n').pop() };
  }

  // torch: optional
  let torch = null;
  if (a.torch && session.inputNames.length === 1) {
    torch = await startTorch(name, firstInput, path.join(dir, 'torch', 'output.npy'), a.threads);
    if (torch.error) { res.torch_error = torch.error; torch = null; } else res.torch = torch.info;
  } else if (a.torch) res.torch_error = 'models with several inputs are not run in PyTorch';

  const ortTimes = [];
  const torchTimes = [];
  const kilnMedians = [];
  let kilnJson = null;
  const kilnCmd = ['run', model, ...inputArgs, '--output-dir', path.join(dir, 'kiln'), '--repeat', String(a.warmup + a.repeat + 1), '--json',
    ...(fs.existsSync(a.db) ? ['--db', a.db] : []), ...dev];
  const steps = {
    ort: async () => {
      for (let k = 0; k < a.repeat; k++) {
        const t0 = process.hrtime.bigint();
        await session.run(feeds);
        ortTimes.push(Number(process.hrtime.bigint() - t0) / 1e6);
      }
    },
    kiln: async () => {
      if (res.kiln_error) return;
      const p = spawnSync(a.kiln, kilnCmd, { encoding: 'utf8', timeout: a.timeout * 1000, maxBuffer: 64 << 20 });
      if (p.error || p.status !== 0) {
        res.kiln_error = p.error ? `${a.kiln}: ${p.error.message}` : `kiln exited with status ${p.status ?? p.signal}: ${(p.stderr || '').trim().split('\n').slice(-3).join(' | ')}`;
        return;
      }
      try {
        kilnJson = JSON.parse(p.stdout.trim().split('\n').filter((l) => l.startsWith('{')).pop());
        const runs = kilnJson.latency_ms.runs;
        kilnMedians.push(Array.isArray(runs) && runs.length > a.warmup + 1 ? median(runs.slice(a.warmup + 1)) : kilnJson.latency_ms.median);
      } catch (e) { res.kiln_error = `kiln --json printed no JSON object: ${p.stdout.slice(0, 200)}`; }
    },
    torch: async () => {
      if (!torch) return;
      try { torchTimes.push(...await torch.request(a.repeat)); } catch (e) { res.torch_error = e.message; torch.close(); torch = null; }
    },
  };
  const order = ['ort', 'kiln', 'torch'];
  for (let r = 0; r < a.rounds; r++) {
    for (let k = 0; k < order.length; k++) await steps[order[(k + r) % order.length]]();
  }
  torch?.close();

  res.ort_ms = { median: median(ortTimes), min: Math.min(...ortTimes), runs: ortTimes.length };
  if (kilnMedians.length) res.kiln_ms = { median: median(kilnMedians), per_call_medians: kilnMedians, first_run: kilnJson.latency_ms.first };
  if (torchTimes.length) res.torch_ms = { median: median(torchTimes), min: Math.min(...torchTimes), runs: torchTimes.length };
  if (kilnJson) res.tuning = kilnJson.tuning;
  if (res.kiln_ms) res.ratio_ort = res.kiln_ms.median / res.ort_ms.median;
  if (res.kiln_ms && res.torch_ms) res.ratio_torch = res.kiln_ms.median / res.torch_ms.median;

  // agreement with ONNX Runtime
  let bad = !!res.kiln_error;
  for (const [i, oname] of session.outputNames.entries()) {
    const o = ref[oname];
    const row = { name: oname, dims: o.dims, kiln_rel: null, torch_rel: null, status: 'kiln failed' };
    res.outputs.push(row);
    if (!res.kiln_error) {
      const f = path.join(dir, 'kiln', `${sanitize(oname)}.npy`);
      if (!fs.existsSync(f)) { row.status = 'missing kiln output'; bad = true; } else {
        const k = readNpy(f);
        if (k.dims.join() !== o.dims.join()) { row.status = `shape [${k.dims}] != ORT [${o.dims}]`; bad = true; } else {
          row.kiln_rel = relError(k.data, o.data).rel;
          row.status = row.kiln_rel <= a.tol ? 'ok' : `FAIL (> ${a.tol})`;
          if (!(row.kiln_rel <= a.tol)) bad = true;
        }
      }
    }
    const tf = path.join(dir, 'torch', 'output.npy');
    if (i === 0 && res.torch && fs.existsSync(tf)) {
      const t = readNpy(tf);
      if (t.dims.join() === o.dims.join()) row.torch_rel = relError(t.data, o.data).rel;
    }
  }
  res.ok = !bad;
  if (!res.ok) res.files = dir;
  else if (!a.work) fs.rmSync(dir, { recursive: true, force: true });
  return res;
}

// ---- main -------------------------------------------------------------------

async function main() {
  const a = parseArgs(process.argv.slice(2));
  let ort;
  try { ort = require('onnxruntime-node'); } catch (e) {
    console.error(`bench_all.mjs: onnxruntime-node is not installed (run bench/models/setup.sh): ${e.message}`);
    return 2;
  }
  if (!fs.existsSync(a.kiln)) { console.error(`bench_all.mjs: ${a.kiln}: no kiln binary (--kiln PATH)`); return 2; }
  const work = a.work ? path.resolve(a.work) : fs.mkdtempSync(path.join(os.tmpdir(), 'kiln-bench-'));
  const names = a.models.split(',').filter((s) => s);
  /* time the CPUs lose to others (bench/cpu_gaps.c, built beside kiln): the
   * load average cannot see another guest of a virtual machine's host */
  const gapsBin = path.join(path.dirname(path.resolve(a.kiln)), 'kiln_cpu_gaps');
  const gaps = () => {
    if (!fs.existsSync(gapsBin)) return null;
    const g = spawnSync(gapsBin, ['2', '--json'], { encoding: 'utf8' });
    try { return JSON.parse(g.stdout); } catch { return null; }
  };
  const fmtGaps = (g) => (g ? `; CPUs lost ${(100 * g.lost).toFixed(1)}% of the time to others (${g.gaps_over_50us_per_s.toFixed(0)} gaps > 50 us per CPU-second)` : '');
  const gaps0 = gaps();
  const load0 = os.loadavg();
  const devs = spawnSync(a.kiln, ['devices', '--json'], { encoding: 'utf8' });
  let device = null;
  try { device = JSON.parse(devs.stdout); } catch { /* not fatal */ }
  console.log(`kiln ${a.kiln}, database ${a.db}${a.tune ? ` (tuning ${a.tune} s per model first)` : fs.existsSync(a.db) ? '' : ' (missing: kiln runs untuned; --tune S creates it)'}`);
  console.log(`ONNX Runtime ${require('onnxruntime-node/package.json').version} CPU, ${a.threads} threads; ${a.rounds} rounds x ${a.repeat} runs (kiln after ${a.warmup} warm-up runs); ` +
    `load average ${load0.map((x) => x.toFixed(2)).join(' ')}, ${os.cpus().length} CPUs${fmtGaps(gaps0)}`);
  const results = [];
  const fmt = (x, d = 1) => (x == null ? '-' : x.toFixed(d));
  const fmtE = (x) => (x == null ? '-' : x === Infinity ? 'inf' : x.toExponential(1));
  const head = `${'model'.padEnd(16)} ${'ORT ms'.padStart(9)} ${'kiln ms'.padStart(9)} ${'torch ms'.padStart(9)} ${'kiln/ORT'.padStart(9)} ` +
    `${'kiln/torch'.padStart(10)} ${'kiln err'.padStart(9)} ${'torch err'.padStart(9)} ${'tuned'.padStart(7)}  status`;
  for (const name of names) {
    let r;
    try { r = await benchModel(ort, a, name, work); } catch (e) {
      r = { model: name, kiln_error: `${e.message}`, ok: false, outputs: [] };
    }
    results.push(r);
    const err = r.outputs?.length ? Math.max(...r.outputs.map((o) => o.kiln_rel ?? Infinity)) : null;
    const terr = r.outputs?.[0]?.torch_rel ?? null;
    const tuned = r.tuning ? `${r.tuning.tuned}/${r.tuning.tunable}` : '-';
    if (results.length === 1) console.log(head);
    console.log(`${name.padEnd(16)} ${fmt(r.ort_ms?.median).padStart(9)} ${fmt(r.kiln_ms?.median).padStart(9)} ${fmt(r.torch_ms?.median).padStart(9)} ` +
      `${fmt(r.ratio_ort, 2).padStart(9)} ${fmt(r.ratio_torch, 2).padStart(10)} ${fmtE(r.kiln_error ? null : err).padStart(9)} ${fmtE(terr).padStart(9)} ` +
      `${tuned.padStart(7)}  ${r.ok ? 'ok' : r.kiln_error ? 'kiln failed' : 'MISMATCH'}`);
    if (r.kiln_error) console.log(`    kiln: ${r.kiln_error}`);
    if (r.torch_error) console.log(`    torch: ${r.torch_error}`);
    if (r.tune?.error) console.log(`    tune: ${r.tune.error}`);
    if (r.files) console.log(`    files kept in ${r.files}`);
  }
  const load1 = os.loadavg();
  const gaps1 = gaps();
  console.log(`load average at the end ${load1.map((x) => x.toFixed(2)).join(' ')}${fmtGaps(gaps1)}; JSON: ${a.json}`);
  fs.mkdirSync(path.dirname(a.json), { recursive: true });
  fs.writeFileSync(a.json, JSON.stringify({ date: new Date().toISOString(), kiln: a.kiln, db: a.db, tune_budget_s: a.tune,
    threads: a.threads, rounds: a.rounds, repeat: a.repeat, warmup: a.warmup, tol: a.tol, loadavg_start: load0, loadavg_end: load1, cpu_gaps_start: gaps0, cpu_gaps_end: gaps1, cpus: os.cpus().length,
    onnxruntime: require('onnxruntime-node/package.json').version, devices: device, models: results }, null, 2) + '\n');
  if (!a.work && results.every((r) => r.ok)) fs.rmSync(work, { recursive: true, force: true });
  return results.every((r) => r.ok) ? 0 : 1;
}

main().then((rc) => process.exit(rc), (e) => { console.error(`bench_all.mjs: ${e.stack || e}`); process.exit(2); });
