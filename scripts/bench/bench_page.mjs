// What the page benchmarks share: the phone they can emulate, a page shaped like it or like a
// desktop, the long-task observer and the median of repeats.
//
// The phone (--phone in bench_load.mjs and bench_interaction.mjs): a
// 390 x 844 CSS-pixel touch screen at 3x, the CPU slowed 4x (Chromium's CPU throttling, which
// slows the page's renderer: its main thread and the engine's worker), and 20 Mbit/s with 40 ms
// latency, the network conditions the phone goals are stated for (issue 29's budget: live within
// 4 s, no main-thread task over 100 ms after typing or a click).
export const PHONE = {
  viewport: { width: 390, height: 844 },
  deviceScaleFactor: 3,
  isMobile: true,
  hasTouch: true,
  cpuSlowdown: 4,
  mbit: 20,
  latencyMs: 40,
};

export const DESKTOP = { viewport: { width: 1280, height: 900 } };

// Chromium's network emulation for a page (and its dedicated workers).
export function networkConditions(mbit, latencyMs) {
  return { offline: false, latency: latencyMs, downloadThroughput: (mbit * 1e6) / 8, uploadThroughput: (mbit * 1e6) / 8 };
}

// A context shaped like the phone (or the desktop), and a page in it with the phone's CPU
// slowdown; network: the conditions to emulate, or null for none.
export async function benchPage(browser, { phone = false, network = null, disableCache = false } = {}) {
  const { viewport, deviceScaleFactor, isMobile, hasTouch } = phone ? PHONE : { ...DESKTOP, deviceScaleFactor: 1, isMobile: false, hasTouch: false };
  const context = await browser.newContext({ viewport, deviceScaleFactor, isMobile, hasTouch });
  const page = await context.newPage();
  const session = await context.newCDPSession(page);
  if (network || disableCache) await session.send('Network.enable');
  if (disableCache) await session.send('Network.setCacheDisabled', { cacheDisabled: true });
  if (network) await session.send('Network.emulateNetworkConditions', network);
  if (phone) await session.send('Emulation.setCPUThrottlingRate', { rate: PHONE.cpuSlowdown });
  return { context, page, session };
}

// An init script (page.addInitScript) that records the main thread's long tasks (over 50 ms)
// from navigation on in window.__longtasks as {start, duration}; none where Chromium has no
// longtask entries.
export const OBSERVE_LONG_TASKS = () => {
  window.__longtasks = [];
  try {
    new PerformanceObserver((list) => {
      for (const e of list.getEntries()) window.__longtasks.push({ start: e.startTime, duration: e.duration });
    }).observe({ type: 'longtask', buffered: true });
  } catch {
    // No longtask support: the figures come out empty.
  }
};

// The median of a list of numbers (the mean of the middle two for an even count).
export function median(values) {
  const v = values.slice().sort((a, b) => a - b);
  return v.length % 2 ? v[(v.length - 1) / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
}
