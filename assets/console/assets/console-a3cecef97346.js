// The console's only script: live figures and the queue chart. Pages work without it (every
// figure is server-rendered and every action is a form); this keeps them current.
(() => {
  const REFRESH_MS = Number(document.body.dataset.refreshMs) || 3000;

  /** GET a console JSON endpoint with the session cookie; null on any failure. */
  async function getJson(url) {
    try {
      const res = await fetch(url, { credentials: 'same-origin', headers: { accept: 'application/json' } });
      if (res.status === 401) {
        window.location.assign('/console/sign-in');
        return null;
      }
      return res.ok ? await res.json() : null;
    } catch {
      return null;
    }
  }

  /** Every [data-env][data-field] cell on the page shows one figure of one environment. */
  function liveCells() {
    const cells = document.querySelectorAll('[data-live-env][data-field]');
    const ids = [...new Set([...cells].map((c) => c.dataset.liveEnv))];
    return { cells, ids };
  }

  function show(cells, summaries) {
    const byId = new Map(summaries.map((s) => [s.environmentId, s]));
    for (const cell of cells) {
      const s = byId.get(cell.dataset.liveEnv);
      if (!s) continue;
      const field = cell.dataset.field;
      const text = String(s[field]);
      if (cell.textContent !== text) cell.textContent = text;
    }
    const stamp = document.querySelector('[data-live-stamp]');
    if (stamp && summaries[0]) stamp.textContent = `Live · read ${summaries[0].at.slice(11, 19)} UTC`;
  }

  async function refreshFigures() {
    const { cells, ids } = liveCells();
    if (ids.length === 0 || document.hidden) return;
    const body = await getJson(`/console/live/summaries?ids=${ids.map(encodeURIComponent).join(',')}`);
    if (body) show(cells, body.data);
  }

  // The chart: the housekeeping samples of the last hour, and the live figures as the last point.
  const SERIES = [
    { label: 'Depth', key: 'depth', stroke: '#1f5fbf', width: 2 },
    { label: 'Pending', key: 'pending', stroke: '#b34700', width: 2, dash: [6, 4] },
    { label: 'Claim queued', key: 'claimQueued', stroke: '#2e7d32', width: 2, dash: [2, 3] },
  ];

  function chartData(body) {
    const points = body.samples.map((s) => ({ t: Date.parse(s.minute) / 1000, s }));
    if (body.now) points.push({ t: Date.parse(body.now.at) / 1000, s: body.now });
    return [points.map((p) => p.t), ...SERIES.map((x) => points.map((p) => p.s[x.key]))];
  }

  function lastHour(u) {
    const xs = u.data[0];
    const end = xs.length ? xs[xs.length - 1] : Date.now() / 1000;
    return [end - 3600, end];
  }

  async function drawChart(box) {
    if (typeof window.uPlot !== 'function') return;
    const body = await getJson(box.dataset.samplesUrl);
    if (!body) return;
    const data = chartData(body);
    const width = Math.max(240, box.clientWidth);
    if (box.plot) {
      box.plot.setData(data);
      return;
    }
    box.textContent = '';
    box.plot = new window.uPlot(
      {
        width,
        height: 220,
        series: [
          {},
          ...SERIES.map((x) => ({ label: x.label, stroke: x.stroke, width: x.width, dash: x.dash })),
        ],
        axes: [{}, { label: 'items' }],
        scales: {
          // Always the last hour, ending at the live point, however few samples there are.
          x: { time: true, range: (u) => lastHour(u) },
          y: { range: (_u, _min, max) => [0, Math.max(4, Math.ceil(max * 1.1))] },
        },
      },
      data,
      box,
    );
    window.addEventListener('resize', () =>
      box.plot.setSize({ width: Math.max(240, box.clientWidth), height: 220 }),
    );
  }

  function start() {
    const charts = [...document.querySelectorAll('[data-chart]')];
    const tick = () => {
      refreshFigures();
      for (const box of charts) if (!document.hidden) drawChart(box);
    };
    if (liveCells().ids.length > 0 || charts.length > 0) {
      for (const box of charts) drawChart(box);
      setInterval(tick, REFRESH_MS);
    }
    // A secret shown once: select it whole on focus, so a keyboard user can copy it at once.
    for (const el of document.querySelectorAll('[data-secret]'))
      el.addEventListener('focus', () => el.select());
  }

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start);
  else start();
})();
