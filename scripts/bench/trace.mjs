// Where a page's main thread spends its time during one stretch of a benchmark: a Chromium
// performance trace (the DevTools timeline's categories) and a sampling CPU profile taken together,
// summarised as (1) the long tasks (over 50 ms) with the self time of what ran inside each, by kind
// (script by function, style, layout, paint, garbage collection, ...), and (2) the JS functions
// with the most self time over the whole stretch, by file and line.
// Used by bench_interaction.mjs --trace; the raw files are written for DevTools (Performance panel:
// load the .json trace; the .cpuprofile opens in the same panel).
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

const CATEGORIES = ['devtools.timeline', 'disabled-by-default-devtools.timeline', 'v8.execute', 'blink.user_timing', 'toplevel'];
const LONG_TASK_US = 50000;

export async function startTrace(browser, context, page) {
  await browser.startTracing(page, { categories: CATEGORIES });
  const cdp = await context.newCDPSession(page);
  await cdp.send('Profiler.enable');
  await cdp.send('Profiler.setSamplingInterval', { interval: 200 });
  await cdp.send('Profiler.start');
  return { browser, cdp };
}

// What a trace event is counted as: script by function and file, else its own name.
function kind(event) {
  const data = event.args?.data ?? {};
  if (event.name === 'FunctionCall' || event.name === 'EvaluateScript' || event.name === 'v8.compile') {
    const url = (data.url ?? '').replace(/^https?:\/\/[^/]+/, '');
    return `script ${data.functionName || '(anonymous)'} ${url}${data.lineNumber !== undefined ? `:${data.lineNumber}` : ''}`;
  }
  if (event.name === 'TimerFire' || event.name === 'FireAnimationFrame' || event.name === 'EventDispatch') return `${event.name} ${data.type ?? ''}`.trim();
  return event.name;
}

// The renderer's main thread: the CrRendererMain with the most time in top-level tasks.
function mainThread(events) {
  const names = new Map();
  for (const e of events) if (e.ph === 'M' && e.name === 'thread_name') names.set(`${e.pid}:${e.tid}`, e.args.name);
  const busy = new Map();
  for (const e of events) {
    const key = `${e.pid}:${e.tid}`;
    if (e.ph === 'X' && e.name === 'RunTask' && names.get(key) === 'CrRendererMain') busy.set(key, (busy.get(key) ?? 0) + e.dur);
  }
  return [...busy.entries()].sort((a, b) => b[1] - a[1])[0]?.[0] ?? null;
}

// Self time (µs) of each kind inside one task: an event's duration less its children's.
function selfTimes(task, inside) {
  const totals = new Map();
  const stack = [{ end: task.ts + task.dur, label: 'task (other)', child: 0, dur: task.dur }];
  const close = (upTo) => {
    while (stack.length > 1 && stack[stack.length - 1].end <= upTo) {
      const top = stack.pop();
      totals.set(top.label, (totals.get(top.label) ?? 0) + top.dur - top.child);
      stack[stack.length - 1].child += top.dur;
    }
  };
  for (const e of inside) {
    close(e.ts);
    stack.push({ end: e.ts + e.dur, label: kind(e), child: 0, dur: e.dur });
  }
  close(Infinity);
  totals.set(stack[0].label, (totals.get(stack[0].label) ?? 0) + stack[0].dur - stack[0].child);
  return [...totals.entries()].sort((a, b) => b[1] - a[1]);
}

function summariseTrace(trace) {
  const events = trace.traceEvents ?? trace;
  const main = mainThread(events);
  if (!main) return { tasks: [] };
  const onMain = events.filter((e) => e.ph === 'X' && `${e.pid}:${e.tid}` === main && e.dur !== undefined)
    .sort((a, b) => a.ts - b.ts || b.dur - a.dur);
  const tasks = onMain.filter((e) => e.name === 'RunTask' && e.dur > LONG_TASK_US);
  return {
    tasks: tasks.map((task) => {
      const inside = onMain.filter((e) => e !== task && e.name !== 'RunTask' && e.ts >= task.ts && e.ts + e.dur <= task.ts + task.dur);
      return { ms: task.dur / 1000, self: selfTimes(task, inside).slice(0, 6).map(([label, us]) => [label, us / 1000]) };
    }),
  };
}

// Self time per function in the CPU profile (ms), the largest first.
function summariseProfile(profile) {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const counts = new Map();
  for (const id of profile.samples) counts.set(id, (counts.get(id) ?? 0) + 1);
  const msPerSample = (profile.endTime - profile.startTime) / 1000 / Math.max(1, profile.samples.length);
  const totals = new Map();
  for (const [id, count] of counts) {
    const f = byId.get(id).callFrame;
    const url = f.url.replace(/^https?:\/\/[^/]+/, '');
    const label = `${f.functionName || '(anonymous)'}${url ? ` ${url}:${f.lineNumber + 1}` : ''}`;
    totals.set(label, (totals.get(label) ?? 0) + count * msPerSample);
  }
  return [...totals.entries()].sort((a, b) => b[1] - a[1]);
}

// Stops both, writes NAME.json and NAME.cpuprofile under dir and returns the summaries.
export async function stopTrace({ browser, cdp }, dir, name) {
  const { profile } = await cdp.send('Profiler.stop');
  await cdp.detach();
  const buffer = await browser.stopTracing();
  writeFileSync(join(dir, `${name}.json`), buffer);
  writeFileSync(join(dir, `${name}.cpuprofile`), JSON.stringify(profile));
  return { ...summariseTrace(JSON.parse(buffer.toString())), functions: summariseProfile(profile).slice(0, 15) };
}

export function printTrace(name, summary) {
  const ms = (v) => `${v.toFixed(1)} ms`;
  console.log(`\n${name}: ${summary.tasks.length} tasks over 50 ms in the trace`);
  for (const task of summary.tasks) {
    console.log(`  task ${ms(task.ms)}: ${task.self.map(([label, v]) => `${label} ${ms(v)}`).join('; ')}`);
  }
  console.log(`  JS self time by function (CPU profile): ${summary.functions.map(([label, v]) => `${label} ${ms(v)}`).join('; ')}`);
}
