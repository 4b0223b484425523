// npm run bench [-- options]: redstalk against the real beanstalkd and BullMQ,
// scenario by scenario, interleaved, on fresh servers; the table goes to
// stdout, progress to stderr, everything to a JSON file. See bench/README.md.
import path from 'node:path';
import { parseArgs } from 'node:util';
import { measureBullmq } from './bullmq.js';
import { CAPACITY_SCENARIOS, capacityFigures, capacityLines } from './capacity.js';
import { ID_BYTES } from './ledger.js';
import { LIGHT_SCENARIOS, lightFigures, lightLines } from './light.js';
import { aggregate, comparisons, failed, table, writeJson } from './report.js';
import { SCALE_SCENARIOS, scaleReport } from './scale.js';
import { measure, plays, SCENARIOS, targetsOf, type Measurement, type Scenario, type Settings } from './scenarios.js';
import { checkBuilt, FLOORS, hasBeanstalkd, ROOT, SIDECAR_BUILDS, stopEverything, TARGETS, useBaseline, useBeanstalkd, useSidecarBuild, type SidecarBuild, type Target } from './servers.js';

// light (light.ts): fixed low rates, many blocked consumers, right after latency.
SCENARIOS.splice(SCENARIOS.findIndex((s) => s.name === 'latency') + 1, 0, ...LIGHT_SCENARIOS);
// capacity (capacity.ts): full batches on one Redis and on a Redis Cluster; scale (scale.ts): redstalk on both, last.
SCENARIOS.push(...CAPACITY_SCENARIOS, ...SCALE_SCENARIOS);
const GROUPS = [...new Set(SCENARIOS.flatMap((s) => (s.group ? [s.group] : [])))];

const USAGE = `npm run bench -- [options]

  --duration S      seconds of load per scenario and target (default 10, --quick 3)
  --clients N       connections (default 50; mixed and latency: half put, half reserve; scale: N put and N reserve)
  --payload BYTES   job size (default 100, at least ${ID_BYTES})
  --depth N         commands in flight per connection when pipelined (default 100)
  --rate N          puts/s of the fixed-rate latency scenario (default 1000)
  --fill N          jobs queued before mixed-backlog, and at most before drain (default 1000000, --quick 100000)
  --fill-seconds S  upper bound on that filling (default 300)
  --scenarios a,b   which scenarios or groups (${GROUPS.join(', ')}) (default all, below)
  --targets a,b     ${TARGETS.join(', ')} (default all but the floors; beanstalkd where installed, baseline with --baseline);
                    each plays the scenarios it can; floor: a Node server answering from memory (bench/floor-server.ts),
                    the least CPU per job a Node sidecar can use for the same clients; floor-redis: that server keeping
                    its jobs in its own Redis by the least a durable job needs (bench/floor-redis.ts)
  --baseline DIR    another redstalk checkout (an old commit, with node_modules): target baseline, started as redstalk
                    but from DIR, plays every scenario redstalk plays, compared with redstalk in the same run
  --beanstalkd BIN  the beanstalkd binary to measure (default: beanstalkd on PATH), e.g. a 1.13 built from source
  --sidecar dist|src  run redstalk's sidecars as users do, from the build (node dist/cli.js: npm run build first,
                    in the baseline's checkout too), or from source through tsx (default dist)
  --rounds N        play every scenario N times on each target (default 2, --quick 1)
  --json FILE       where the results go (default bench/results/latest.json)
  --quick           short run: --duration 3 --fill 100000 --rounds 1

Scenarios (request/response unless pipelined), the targets that play them:
${SCENARIOS.map((s) => `  ${s.name.padEnd(24)}${s.what} [${targetsOf(s).join(', ')}]`).join('\n')}
`;

function positive(name: string, value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n <= 0) throw new Error(`--${name} must be a positive whole number, not ${value}`);
  return n;
}

function pick<T extends string>(what: string, value: string | undefined, known: readonly T[], fallback: readonly T[]): T[] {
  if (value === undefined) return [...fallback];
  const names = value.split(',').map((s) => s.trim()).filter(Boolean);
  for (const n of names) if (!known.includes(n as T)) throw new Error(`unknown ${what} ${n}; known: ${known.join(', ')}`);
  return names as T[];
}

function parse() {
  const { values } = parseArgs({
    options: {
      duration: { type: 'string' }, clients: { type: 'string' }, payload: { type: 'string' }, depth: { type: 'string' },
      rate: { type: 'string' }, fill: { type: 'string' }, 'fill-seconds': { type: 'string' }, scenarios: { type: 'string' },
      targets: { type: 'string' }, baseline: { type: 'string' }, beanstalkd: { type: 'string' }, sidecar: { type: 'string' }, rounds: { type: 'string' }, json: { type: 'string' }, quick: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    process.stdout.write(USAGE);
    process.exit(0);
  }
  const settings: Settings = {
    durationS: positive('duration', values.duration, values.quick ? 3 : 10),
    clients: positive('clients', values.clients, 50),
    payload: positive('payload', values.payload, 100),
    depth: positive('depth', values.depth, 100),
    rate: positive('rate', values.rate, 1000),
    fill: positive('fill', values.fill, values.quick ? 100_000 : 1_000_000),
    fillSeconds: positive('fill-seconds', values['fill-seconds'], 300),
  };
  if (settings.payload < ID_BYTES) throw new Error(`--payload must be at least ${ID_BYTES}: each job carries its id and send time`);
  if (settings.clients < 2) throw new Error('--clients must be at least 2: mixed runs producers and consumers');
  const [build] = pick('sidecar build', values.sidecar, SIDECAR_BUILDS, ['dist']) as SidecarBuild[];
  useSidecarBuild(build!);
  if (values.baseline !== undefined) useBaseline(values.baseline);
  if (values.beanstalkd !== undefined) useBeanstalkd(values.beanstalkd);
  const defaults = TARGETS.filter((t) => (t !== 'beanstalkd' || hasBeanstalkd()) && (t !== 'baseline' || values.baseline !== undefined) && !FLOORS.includes(t));
  const targets = pick('target', values.targets, TARGETS, defaults);
  if (targets.includes('baseline') && values.baseline === undefined) throw new Error('--targets baseline needs --baseline DIR (the old redstalk checkout to compare with)');
  // A missing or stale build fails now, not after the scenarios before its first use.
  if (targets.includes('redstalk')) checkBuilt(ROOT);
  if (targets.includes('baseline')) checkBuilt(path.resolve(values.baseline!));
  if (targets.includes('beanstalkd') && !hasBeanstalkd()) throw new Error('beanstalkd is not installed (apt-get install beanstalkd, or --beanstalkd BIN)');
  if (!hasBeanstalkd()) process.stderr.write('beanstalkd is not installed: measuring without it, no x bs ratios\n');
  const names = pick('scenario', values.scenarios, [...SCENARIOS.map((s) => s.name), ...GROUPS], SCENARIOS.map((s) => s.name));
  return {
    settings,
    targets,
    scenarios: SCENARIOS.filter((s) => names.includes(s.name) || (s.group !== undefined && names.includes(s.group))),
    rounds: positive('rounds', values.rounds, values.quick ? 1 : 2),
    json: values.json ?? 'bench/results/latest.json',
    baseline: values.baseline,
  };
}

function measureOne(scenario: Scenario, target: Target, round: number, settings: Settings): Promise<Measurement> {
  if (target === 'bullmq') return measureBullmq(scenario, round, settings);
  return measure(scenario, target, round, settings);
}

/** The scenarios in order, each one that names a selected baseline moved next to it. */
function blocks(scenarios: Scenario[]): Scenario[][] {
  const selected = new Set(scenarios.map((s) => s.name));
  const joinsBaseline = (s: Scenario) => s.baseline !== undefined && selected.has(s.baseline);
  return scenarios.filter((s) => !joinsBaseline(s)).map((base) => [base, ...scenarios.filter((s) => joinsBaseline(s) && s.baseline === base.name)]);
}

async function main(): Promise<number> {
  const { settings, targets, scenarios, rounds, json, baseline } = parse();
  const measurements: Measurement[] = [];
  // Interleaved: all rounds of both targets play a block before the next one starts, targets in
  // the order A B B A A B ..., so a slow drift of the machine's speed hits both alike. A block
  // is a scenario and those compared with it, played back to back for the same reason.
  for (const block of blocks(scenarios)) {
    for (let round = 1; round <= rounds; round++) {
      const order = round % 2 ? targets : [...targets].reverse();
      for (const target of order) {
        for (const scenario of block.filter((s) => plays(s, target))) measurements.push(await measureOne(scenario, target, round, settings));
      }
    }
  }
  const rows = aggregate(measurements);
  process.stdout.write(`${table(rows)}\n`);
  const sections = { light: lightFigures(rows), capacity: capacityFigures(rows) };
  for (const line of [...comparisons(rows), ...lightLines(sections.light), ...capacityLines(sections.capacity), ...scaleReport(rows)]) process.stdout.write(`${line}\n`);
  writeJson(json, settings, measurements, rows, baseline, sections);
  process.stderr.write(`results written to ${json}\n`);
  const failures = rows.filter(failed);
  for (const r of failures) {
    const errors = measurements.filter((m) => m.scenario === r.scenario && m.target === r.target).map((m) => m.errors);
    process.stderr.write(`FAILED ${r.scenario} on ${r.target}: lost ${r.lost}, duplicated ${r.duplicates}, unknown ${r.unknown}, errors ${JSON.stringify(errors)}\n`);
  }
  return failures.length ? 1 : 0;
}

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    process.stderr.write(`\n${signal}: stopping the servers\n`);
    void stopEverything().finally(() => process.exit(130));
  });
}

main().then(
  async (code) => { await stopEverything(); process.exit(code); },
  async (err: unknown) => {
    process.stderr.write(`bench: ${err instanceof Error ? err.message : String(err)}\n`);
    await stopEverything();
    process.exit(2);
  },
);
