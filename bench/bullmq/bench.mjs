// BullMQ side of the queue benchmark. `go run ./cmd/queuebench` runs it once
// per workload and round against its own redis-server:
//
//   node bullmq/bench.mjs --host 127.0.0.1 --port N --workload put|putbulk|consume|putdelayed|lateness|memory|keptmemory [sizes]
//   node bullmq/bench.mjs ... --workload schedfires|schedlateness|schedmemory --schedules N [--instances N --warmup-ms N --window-ms N]
//
// It prints one JSON object on stdout (the last line) and logs to stderr.
import { Queue, Worker } from 'bullmq';
import IORedis from 'ioredis';
import { performance } from 'node:perf_hooks';

const args = parseArgs(process.argv.slice(2), {
  host: '127.0.0.1',
  port: '',
  workload: '',
  jobs: '50000',
  'delay-jobs': '20000',
  'mem-jobs': '20000',
  producers: '8',
  concurrency: '8',
  batch: '100',
  body: '100',
  'min-delay-ms': '500',
  'max-delay-ms': '10000',
  'timeout-ms': '120000',
  ops: '20000',
  schedules: '1000',
  instances: '1',
  'warmup-ms': '3000',
  'window-ms': '10000',
});
const int = (k) => {
  const v = Number.parseInt(args[k], 10);
  if (!Number.isFinite(v)) throw new Error(`--${k}: not a number: ${args[k]}`);
  return v;
};

const connection = { host: args.host, port: int('port'), maxRetriesPerRequest: null };
const QUEUE = 'bench';
const JOB = 'j';
// Every job is removed when it completes (or fails): nothing is retained.
const jobOpts = { removeOnComplete: true, removeOnFail: true };

function parseArgs(argv, defaults) {
  const out = { ...defaults };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (!a.startsWith('--')) throw new Error(`unexpected argument ${a}`);
    const k = a.slice(2);
    if (!(k in defaults)) throw new Error(`unknown flag ${a}`);
    out[k] = argv[++i];
  }
  return out;
}

// Wall-clock time in ms with sub-ms precision.
const clockOffset = Date.now() - (performance.timeOrigin + performance.now());
const nowMs = () => performance.timeOrigin + performance.now() + clockOffset;
const nowNs = () => BigInt(Math.round(nowMs() * 1e6));

const pad = (s, n) => (s.length >= n ? s : s + 'x'.repeat(n - s.length));
const body = () => pad('', int('body'));

// checkWaiting fails unless the queue holds exactly n waiting jobs.
async function checkWaiting(queue, n) {
  const c = await queue.getJobCounts('wait');
  if (c.wait !== n) throw new Error(`queue holds ${c.wait} waiting jobs, want ${n}`);
}

// parallel runs fn(i) for i in [0, n) on `workers` async loops.
async function parallel(workers, n, fn) {
  let next = 0;
  const loop = async () => {
    for (;;) {
      const i = next++;
      if (i >= n) return;
      await fn(i);
    }
  };
  await Promise.all(Array.from({ length: workers }, loop));
}

// Same delays as the Go side: uniform over [lo, hi], shuffled with the same LCG.
function delays(n, lo, hi) {
  const d = new Array(n);
  for (let i = 0; i < n; i++) d[i] = n === 1 ? lo : lo + Math.trunc(((hi - lo) * i) / (n - 1));
  const M = (1n << 64n) - 1n;
  let s = 12345n;
  for (let i = n - 1; i > 0; i--) {
    s = (s * 6364136223846793005n + 1442695040888963407n) & M;
    const j = Number((s >> 33n) % BigInt(i + 1));
    [d[i], d[j]] = [d[j], d[i]];
  }
  return d;
}

function counter(n) {
  let got = 0;
  let resolve;
  const done = new Promise((r) => (resolve = r));
  return { inc: () => { if (++got === n) resolve(); }, done, got: () => got };
}

async function waitEmpty(queue) {
  for (;;) {
    const c = await queue.getJobCounts('wait', 'active', 'prioritized', 'delayed', 'paused');
    if (c.wait + c.active + c.prioritized + c.delayed + c.paused === 0) return;
    await new Promise((r) => setTimeout(r, 2));
  }
}

async function usedMemory(redis) {
  const info = await redis.info('memory');
  const m = /^used_memory:(\d+)/m.exec(info);
  return Number(m[1]);
}

// redisCPU returns Redis's own CPU time in µs (INFO cpu used_cpu_user +
// used_cpu_sys); the difference over a timed phase, divided by its jobs, is
// Redis CPU per job.
async function redisCPU(redis) {
  const info = await redis.info('cpu');
  const u = /^used_cpu_user:([\d.]+)/m.exec(info);
  const s = /^used_cpu_sys:([\d.]+)/m.exec(info);
  return (Number(u[1]) + Number(s[1])) * 1e6;
}

// withCPU runs fn and adds redis_cpu_us, Redis's CPU over it, to its result.
async function withCPU(fn) {
  const admin = new IORedis(connection);
  try {
    const c0 = await redisCPU(admin);
    const r = await fn();
    const c1 = await redisCPU(admin);
    return { ...r, redis_cpu_us: c1 - c0 };
  } finally {
    admin.disconnect();
  }
}

function percentile(sorted, p) {
  const k = Math.min(Math.max(Math.ceil((p / 100) * sorted.length) - 1, 0), sorted.length - 1);
  return sorted[k];
}

function newWorker(processor) {
  const w = new Worker(QUEUE, processor, {
    connection,
    concurrency: int('concurrency'),
    autorun: false,
    removeOnComplete: { count: 0 },
    removeOnFail: { count: 0 },
  });
  w.on('error', (err) => console.error('worker error:', err));
  return w;
}

async function putOnePerCall(queue, n) {
  const data = body();
  await queue.add(JOB, data, jobOpts); // warm-up: scripts loaded
  return withCPU(async () => {
    const t0 = performance.now();
    await parallel(int('producers'), n, () => queue.add(JOB, data, jobOpts));
    return { seconds: (performance.now() - t0) / 1000 };
  });
}

async function putBulk(queue, n, batch, opts = jobOpts, workers = int('producers')) {
  const data = body();
  const calls = Math.ceil(n / batch);
  const t0 = performance.now();
  await parallel(workers, calls, (c) => {
    const m = Math.min(batch, n - c * batch);
    return queue.addBulk(Array.from({ length: m }, () => ({ name: JOB, data, opts })));
  });
  return (performance.now() - t0) / 1000;
}

// The job schedulers of the schedule workloads: scheduler i is named s<i>,
// and its jobs carry that name. The seconds cron pattern ticks on the same
// whole seconds as hourglass's and asynq's "@every 1s".
const EVERY_SECOND = '* * * * * *';

async function upsertSchedulers(queue, n, repeat, data = (name) => name) {
  const t0 = performance.now();
  await parallel(16, n, (i) => {
    const name = 's' + i;
    return queue.upsertJobScheduler(name, repeat, { name: JOB, data: data(name), opts: jobOpts });
  });
  return (performance.now() - t0) / 1000;
}

// tickOf returns the tick (ms) of a scheduler's job from its id,
// repeat:<scheduler id>:<tick ms>.
function tickOf(job) {
  const id = String(job.id);
  const i = id.lastIndexOf(':');
  const t = Number(id.slice(i + 1));
  return id.startsWith('repeat:') && Number.isFinite(t) ? t : NaN;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const workloads = {
  async put(queue) {
    const n = int('jobs');
    const r = await putOnePerCall(queue, n);
    await checkWaiting(queue, n + 1);
    return { jobs: n, ...r, per_sec: n / r.seconds };
  },

  async putbulk(queue) {
    const n = int('jobs');
    await queue.add(JOB, body(), jobOpts); // warm-up
    const r = await withCPU(async () => ({ seconds: await putBulk(queue, n, int('batch')) }));
    await checkWaiting(queue, n + 1);
    return { jobs: n, ...r, per_sec: n / r.seconds };
  },

  async consume(queue) {
    const n = int('jobs');
    await putBulk(queue, n, 1000, jobOpts, 4); // pre-fill, not timed
    const cnt = counter(n);
    const worker = newWorker(async () => { cnt.inc(); });
    await worker.waitUntilReady();
    let running;
    const r = await withCPU(async () => {
      const t0 = performance.now();
      running = worker.run();
      await cnt.done;
      await waitEmpty(queue);
      return { seconds: (performance.now() - t0) / 1000 };
    });
    await worker.close();
    await running;
    return { jobs: n, ...r, per_sec: n / r.seconds };
  },

  // putdelayed: --producers put --ops jobs, one per call, delayed by 1 to
  // 4 s, while a Worker waits. per_sec is puts/s; redis_cpu_us covers the
  // puts and the jobs' delivery, until the last is processed.
  async putdelayed(queue) {
    const n = int('ops');
    const cnt = counter(n);
    const worker = newWorker(async () => { cnt.inc(); });
    await worker.waitUntilReady();
    const running = worker.run();
    const data = body();
    const ds = delays(n, 1000, 4000);
    let seconds;
    const r = await withCPU(async () => {
      const t0 = performance.now();
      await parallel(int('producers'), n, (i) => queue.add(JOB, data, { ...jobOpts, delay: ds[i] }));
      seconds = (performance.now() - t0) / 1000;
      await cnt.done;
      return {};
    });
    await worker.close();
    await running;
    return { jobs: n, ...r, seconds, per_sec: n / seconds };
  },

  async lateness(queue) {
    const n = int('delay-jobs');
    const late = new Float64Array(n);
    const cnt = counter(n);
    let k = 0;
    const worker = newWorker(async (job) => {
      const at = nowNs();
      const due = BigInt(job.data.slice(0, job.data.indexOf(':')));
      late[k++] = Number(at - due) / 1e6;
      cnt.inc();
    });
    await worker.waitUntilReady();
    const running = worker.run();
    const ds = delays(n, int('min-delay-ms'), int('max-delay-ms'));
    await parallel(int('producers'), n, (i) => {
      const due = nowNs() + BigInt(ds[i]) * 1000000n;
      return queue.add(JOB, pad(due.toString() + ':', int('body')), { ...jobOpts, delay: ds[i] });
    });
    await cnt.done;
    await worker.close();
    await running;
    const s = Array.from(late).sort((a, b) => a - b);
    return { jobs: n, p50_ms: percentile(s, 50), p99_ms: percentile(s, 99), max_ms: s[s.length - 1] };
  },

  // schedfires: a scheduler produces its next job when a worker takes the
  // current one, so a worker runs; the figure is jobs processed per second.
  async schedfires(queue) {
    const n = int('schedules');
    const setup = await upsertSchedulers(queue, n, { pattern: EVERY_SECOND });
    let done = 0;
    const workers = [];
    for (let i = 0; i < int('instances'); i++) {
      const w = newWorker(async () => { done++; });
      await w.waitUntilReady();
      workers.push(w);
    }
    const running = workers.map((w) => w.run());
    await sleep(int('warmup-ms'));
    const d0 = done;
    const t0 = performance.now();
    await sleep(int('window-ms'));
    const s = (performance.now() - t0) / 1000;
    const processed = done - d0;
    await Promise.all(workers.map((w) => w.close(true)));
    await Promise.all(running);
    return { schedules: n, setup_seconds: setup, jobs: processed, seconds: s, per_sec: processed / s };
  },

  // schedlateness: --instances workers; lateness = received - tick.
  async schedlateness(queue) {
    const n = int('schedules');
    const setup = await upsertSchedulers(queue, n, { pattern: EVERY_SECOND });
    const from = nowMs() + int('warmup-ms');
    const to = from + int('window-ms');
    const late = [];
    const seen = new Map();
    let dups = 0;
    let unknown = 0;
    const workers = [];
    for (let i = 0; i < int('instances'); i++) {
      const w = newWorker(async (job) => {
        const at = nowMs();
        if (at < from || at >= to) return;
        const tick = tickOf(job);
        if (Number.isNaN(tick)) {
          unknown++;
          return;
        }
        const k = job.data + '@' + tick;
        const c = (seen.get(k) || 0) + 1;
        seen.set(k, c);
        if (c > 1) dups++;
        late.push(at - tick);
      });
      await w.waitUntilReady();
      workers.push(w);
    }
    const running = workers.map((w) => w.run());
    await sleep(to - nowMs() + 200);
    await Promise.all(workers.map((w) => w.close(true)));
    await Promise.all(running);
    if (late.length === 0) throw new Error(`no job received in the window (${unknown} without a tick)`);
    const s = late.sort((a, b) => a - b);
    return { schedules: n, setup_seconds: setup, jobs: s.length, p50_ms: percentile(s, 50), p99_ms: percentile(s, 99), max_ms: s[s.length - 1], duplicates: dups, unknown };
  },

  // schedmemory: used_memory per scheduler, the scheduler's next
  // (delayed) job included: BullMQ keeps one for every scheduler.
  async schedmemory(queue) {
    const n = int('schedules');
    const repeat = { pattern: '*/5 * * * *', tz: 'Europe/Berlin' };
    const data = () => '01234567890123456789';
    const admin = new IORedis(connection);
    try {
      await queue.upsertJobScheduler('warm-up', repeat, { name: JOB, data: data(), opts: jobOpts });
      const before = await usedMemory(admin);
      await upsertSchedulers(queue, n, repeat, data);
      const after = await usedMemory(admin);
      return { schedules: n, before, after, bytes_per_schedule: (after - before) / n };
    } finally {
      admin.disconnect();
    }
  },

  // keptmemory: used_memory per completed job kept with its return value
  // for 60 s (removeOnComplete by age), each added with a job ID of the
  // caller's; the Go side's keptmemory workload says what the others do.
  async keptmemory(queue) {
    const n = int('mem-jobs');
    const opts = { removeOnComplete: { age: 60 }, removeOnFail: true };
    const admin = new IORedis(connection);
    const done = counter(n + 1);
    const worker = new Worker(QUEUE, async (job) => {
      done.inc();
      return 'result ' + job.id.slice('order-'.length);
    }, { connection, concurrency: int('concurrency') });
    try {
      await queue.add(JOB, body(), { ...opts, jobId: 'order--1' }); // warm-up: queue meta, scripts loaded
      for (;;) {
        if ((await queue.getJobCounts('completed')).completed === 1) break;
        await new Promise((r) => setTimeout(r, 20));
      }
      const before = await usedMemory(admin);
      await parallel(int('producers'), n, (i) => queue.add(JOB, body(), { ...opts, jobId: 'order-' + i }));
      for (;;) {
        if ((await queue.getJobCounts('completed')).completed === n + 1) break;
        await new Promise((r) => setTimeout(r, 20));
      }
      const after = await usedMemory(admin);
      const j = await queue.getJob('order-' + (n - 1));
      if (!j || j.returnvalue !== 'result ' + (n - 1)) throw new Error('the last job is not kept with its result');
      return { jobs: n, before, after, bytes_per_job: (after - before) / n };
    } finally {
      await worker.close();
      admin.disconnect();
    }
  },

  async memory(queue) {
    const n = int('mem-jobs');
    const opts = { ...jobOpts, delay: 3600 * 1000 };
    const admin = new IORedis(connection);
    try {
      await queue.add(JOB, body(), opts); // warm-up: queue meta, scripts loaded
      const before = await usedMemory(admin);
      await putBulk(queue, n, int('batch'), opts);
      const after = await usedMemory(admin);
      return { jobs: n, before, after, bytes_per_job: (after - before) / n };
    } finally {
      admin.disconnect();
    }
  },
};

async function main() {
  const run = workloads[args.workload];
  if (!run) throw new Error(`unknown --workload ${args.workload}`);
  const queue = new Queue(QUEUE, { connection });
  queue.on('error', (err) => console.error('queue error:', err));
  await queue.waitUntilReady();
  const timer = setTimeout(() => {
    console.log(JSON.stringify({ workload: args.workload, error: `timed out after ${args['timeout-ms']} ms` }));
    process.exit(2);
  }, int('timeout-ms'));
  try {
    const r = await run(queue);
    console.log(JSON.stringify({ workload: args.workload, ...r }));
  } finally {
    clearTimeout(timer);
    await queue.close();
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    console.log(JSON.stringify({ workload: args.workload, error: String(err && err.stack ? err.message : err) }));
    process.exit(1);
  },
);
