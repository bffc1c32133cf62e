// BullMQ side of the tube-limit benchmark (go run ./cmd/tubelimitbench):
// BullMQ's queue-wide limiter, held by workers in several processes.
//
//   node bullmq/ratelimit.mjs --port N --role fill --jobs N
//   node bullmq/ratelimit.mjs --port N --role work --concurrency 4 --max 1000 --duration-ms 1000 --start-ms T --run-ms 60000
//
// fill adds the jobs; work runs a Worker with the limiter from --start-ms
// (Unix ms) for --run-ms and prints, as its last line, one JSON object with
// the Unix time (ms) at which each job was handed to the processor.
import { Queue, Worker } from 'bullmq';

const args = { host: '127.0.0.1', port: '', role: '', jobs: '0', concurrency: '4', max: '1000', 'duration-ms': '1000', 'start-ms': '0', 'run-ms': '60000' };
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i++) {
  const k = argv[i].replace(/^--/, '');
  if (!(k in args)) throw new Error(`unknown flag ${argv[i]}`);
  args[k] = argv[++i];
}
const int = (k) => Number.parseInt(args[k], 10);
const connection = { host: args.host, port: int('port'), maxRetriesPerRequest: null };
const QUEUE = 'limited';

if (args.role === 'fill') {
  const q = new Queue(QUEUE, { connection });
  const n = int('jobs');
  for (let i = 0; i < n; i += 1000) {
    const batch = [];
    for (let k = i; k < Math.min(n, i + 1000); k++) {
      batch.push({ name: 'j', data: { i: k }, opts: { removeOnComplete: true, removeOnFail: true } });
    }
    await q.addBulk(batch);
  }
  await q.close();
  console.log(JSON.stringify({ jobs: n }));
} else if (args.role === 'work') {
  const times = [];
  const worker = new Worker(QUEUE, async () => { times.push(Date.now()); }, {
    connection, concurrency: int('concurrency'), autorun: false,
    limiter: { max: int('max'), duration: int('duration-ms') },
  });
  await worker.waitUntilReady();
  const start = int('start-ms');
  await new Promise((r) => setTimeout(r, Math.max(0, start - Date.now())));
  const running = worker.run();
  await new Promise((r) => setTimeout(r, Math.max(0, start + int('run-ms') - Date.now())));
  await worker.close(true);
  await running;
  console.log(JSON.stringify({ times }));
} else {
  throw new Error(`--role fill or work, not ${args.role}`);
}
