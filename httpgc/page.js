'use strict';
// The dashboard: a stream of snapshots (api/events), polling when the
// stream fails; every URL is relative, so the page works wherever the
// handler is mounted. Group keys are shown through textContent only.
(() => {
  const body = document.body;
  const interval = Number(body.dataset.intervalMs) || 1000;
  const can = { patch: body.dataset.patch === 'true', evict: body.dataset.evict === 'true', shutdown: body.dataset.shutdown === 'true' };
  const LIMITS = ['maxConcurrency', 'maxInFlight', 'queueThreshold', 'weight'];
  const SAMPLES = 60;
  const $ = (id) => document.getElementById(id);
  const nf = new Intl.NumberFormat('en-US');

  let paused = false, source = null, lastMsg = 0, lastTry = 0, updatedAt = 0;
  let prevStats = null, prevAt = 0, selected = null, dirty = false;
  const history = new Map(); // displayed key -> waiting, oldest first

  function el(tag, props, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(props || {})) {
      if (k === 'class') e.className = v;
      else if (k === 'text') e.textContent = v;
      else e.setAttribute(k, v);
    }
    for (const k of kids) if (k != null) e.append(k);
    return e;
  }
  const num = (n) => (n === 'unlimited' ? '∞' : nf.format(n));
  function dur(ms) {
    if (ms < 1000) return ms + ' ms';
    if (ms < 60000) return (ms / 1000).toFixed(ms < 10000 ? 1 : 0) + ' s';
    return Math.floor(ms / 60000) + ' m ' + Math.round((ms % 60000) / 1000) + ' s';
  }
  // A group's URL names it in the query: a browser would resolve a path
  // segment such as "." or "..", escaped or not.
  const groupAPI = (key, action) => 'api/group' + (action || '') + '?group=' + encodeURIComponent(key);
  const badge = (src) => el('span', { class: 'src src-' + src, text: src, title: 'set by: ' + src });

  // meter shows v against max: a bar, the figures and what set max. A
  // full bar is amber where being full is normal work (running), red where
  // it turns tasks away or holds them (in flight, waiting).
  function meter(v, max, src, fullIsBusy) {
    const bar = el('div', { class: 'bar' });
    if (max === 'unlimited') {
      bar.classList.add('none');
      bar.title = 'no limit';
    } else {
      const r = max > 0 ? Math.min(v / max, 1) : (v > 0 ? 1 : 0);
      const fill = el('span');
      fill.style.width = (r * 100).toFixed(1) + '%';
      bar.append(fill);
      if (r >= 1) bar.classList.add(fullIsBusy ? 'hot' : 'full');
      else if (r >= 0.75 && !fullIsBusy) bar.classList.add('hot');
    }
    const m = el('div', { class: 'meter' }, bar, el('span', { class: 'figure', text: num(v) + ' / ' + num(max) }));
    if (src) m.append(badge(src));
    return m;
  }

  function spark(values) {
    const NS = 'http://www.w3.org/2000/svg', w = 120, h = 24;
    const svg = document.createElementNS(NS, 'svg');
    for (const [k, v] of Object.entries({ width: w, height: h, viewBox: `0 0 ${w} ${h}`, class: 'spark' })) svg.setAttribute(k, v);
    const top = Math.max(1, ...values);
    const pts = values.map((v, i) => [w - (values.length - 1 - i) * (w / (SAMPLES - 1)), h - 1 - (v / top) * (h - 3)]);
    const line = pts.map((p) => p[0].toFixed(1) + ',' + p[1].toFixed(1)).join(' ');
    const area = document.createElementNS(NS, 'polygon');
    area.setAttribute('points', `${line} ${w},${h} ${pts[0][0].toFixed(1)},${h}`);
    const pl = document.createElementNS(NS, 'polyline');
    pl.setAttribute('points', line);
    const title = document.createElementNS(NS, 'title');
    title.textContent = `waiting: now ${values[values.length - 1]}, peak ${Math.max(...values)}`;
    svg.append(title, area, pl);
    return svg;
  }

  const CARDS = [
    ['groups', 'Groups'], ['running', 'Running'], ['waiting', 'Waiting'], ['blocked', 'Blocked'], ['inflight', 'In flight'],
    ['submitted', 'Submitted'], ['succeeded', 'Succeeded'], ['failed', 'Failed'], ['cancelled', 'Cancelled'], ['rejected', 'Rejected'],
  ];
  const RATED = new Set(['submitted', 'succeeded', 'failed', 'cancelled', 'rejected']);

  function renderTotals(s) {
    const now = Date.now(), dt = (now - prevAt) / 1000;
    const cards = CARDS.map(([k, label]) => {
      const card = el('div', { class: 'card', id: 'card-' + k }, el('div', { class: 'label', text: label }));
      if (k === 'inflight') {
        const capped = s.globalMaxInFlight !== 'unlimited';
        card.append(el('div', { class: 'value', text: num(s.globalInFlight) + (capped ? ' / ' + num(s.globalMaxInFlight) : '') }),
          capped ? meter(s.globalInFlight, s.globalMaxInFlight, null, true).firstChild : el('div', { class: 'rate', text: 'no global cap' }));
        return card;
      }
      card.append(el('div', { class: 'value', text: num(s[k]) }));
      let rate = '';
      if (RATED.has(k) && prevStats && dt > 0) rate = nf.format(Math.max(0, (s[k] - prevStats[k]) / dt).toFixed(1)) + ' /s';
      card.append(el('div', { class: 'rate', text: rate }));
      if ((k === 'failed' || k === 'rejected') && prevStats && s[k] > prevStats[k]) card.classList.add('bad');
      if (k === 'waiting' && s.waiting > 0) card.classList.add('warn');
      return card;
    });
    $('totals').replaceChildren(...cards);
    $('isolation').textContent = 'isolation: ' + s.isolation;
    prevStats = s;
    prevAt = now;
  }

  function record(rows) {
    const seen = new Set();
    for (const r of rows) {
      seen.add(r.group);
      const h = history.get(r.group) || [];
      h.push(r.waiting);
      if (h.length > SAMPLES) h.shift();
      history.set(r.group, h);
    }
    for (const [k, h] of history) {
      if (seen.has(k)) continue;
      h.push(0);
      if (h.length > SAMPLES) h.shift();
      if (h.every((v) => v === 0)) history.delete(k);
    }
  }

  function renderGroups(rows, total) {
    record(rows);
    const trs = rows.map((r) => {
      const wait = r.oldestWaitMs;
      const tr = el('tr', { tabindex: '0', 'data-group': r.group },
        el('td', { class: 'key', text: r.group, title: r.group }),
        el('td', {}, meter(r.running, r.maxConcurrency, r.source.maxConcurrency, true)),
        el('td', {}, meter(r.inFlight, r.maxInFlight, r.source.maxInFlight)),
        el('td', {}, meter(r.waiting, r.queueThreshold, r.source.queueThreshold)),
        el('td', { class: 'num' + (wait >= 5000 ? ' wait-long' : wait >= 1000 ? ' wait-some' : ''), text: wait ? dur(wait) : '–' }),
        el('td', { class: 'nowrap' }, el('span', { text: num(r.weight) }), badge(r.source.weight)),
        el('td', {}, spark(history.get(r.group))));
      if (r.group === selected) tr.classList.add('selected');
      tr.addEventListener('click', () => select(r.group));
      tr.addEventListener('keydown', (ev) => { if (ev.key === 'Enter') select(r.group); });
      return tr;
    });
    $('groups').tBodies[0].replaceChildren(...trs);
    $('nogroups').hidden = rows.length > 0;
    $('shown').textContent = `${nf.format(total)} group${total === 1 ? '' : 's'}, ${rows.length} shown`;
  }

  function renderWarnings(list) {
    const trs = list.map((w) => {
      const g = el('td', { class: 'key', text: w.group, title: w.group });
      g.addEventListener('click', () => select(w.group));
      return el('tr', {},
        el('td', { class: 'nowrap', text: new Date(w.at).toLocaleTimeString() }), g,
        el('td', {}, el('span', { class: 'badge', text: w.trigger })),
        el('td', { class: 'num', text: num(w.waiting) }), el('td', { class: 'num', text: dur(w.oldestWaitMs) }),
        el('td', { class: 'num', text: num(w.limit) }), el('td', { class: 'num', text: num(w.inFlight) }),
        el('td', { class: 'num', text: num(w.suppressed) }));
    });
    $('warnings').tBodies[0].replaceChildren(...trs);
    $('nowarnings').hidden = list.length > 0;
    $('warncount').textContent = list.length ? `${list.length} most recent, newest first` : '';
  }

  const customView = () => $('prefix').value !== '' || $('sort').value !== 'oldestWait';
  async function getJSON(url) {
    const res = await fetch(url, { headers: { Accept: 'application/json' } });
    if (!res.ok) throw new Error(url + ': ' + res.status);
    return res.json();
  }
  async function customGroups() {
    const q = new URLSearchParams({ sort: $('sort').value, prefix: $('prefix').value, limit: '100' });
    const g = await getJSON('api/groups?' + q);
    renderGroups(g.groups, g.total);
  }

  async function onSnapshot(s) {
    updatedAt = Date.now();
    renderTotals(s.stats);
    if (customView()) await customGroups().catch(() => {});
    else renderGroups(s.groups, s.stats.groups);
    if (selected) loadDetail();
  }

  function setConn(cls, text) {
    const c = $('conn');
    c.className = cls;
    c.textContent = text;
  }

  function connect() {
    if (source || paused || typeof EventSource === 'undefined') return;
    lastTry = Date.now();
    source = new EventSource('api/events');
    source.addEventListener('snapshot', (ev) => {
      lastMsg = Date.now();
      setConn('live', 'live');
      onSnapshot(JSON.parse(ev.data));
    });
    source.addEventListener('warnings', (ev) => renderWarnings(JSON.parse(ev.data)));
    source.onerror = () => {
      if (source && source.readyState === EventSource.CLOSED) source = null;
    };
  }

  async function poll() {
    try {
      const [stats, groups, warnings] = await Promise.all([
        getJSON('api/stats'), getJSON('api/groups?limit=100'), getJSON('api/warnings')]);
      setConn('polling', 'polling');
      await onSnapshot({ stats, groups: groups.groups });
      renderWarnings(warnings.warnings);
    } catch (e) {
      setConn('down', 'unreachable');
    }
  }

  // Every interval: poll if the stream has said nothing for a while, and
  // try the stream again now and then once it has given up.
  setInterval(() => {
    if (paused) return;
    if (Date.now() - lastMsg > 2.5 * interval) poll();
    if (!source && Date.now() - lastTry > 30000) connect();
  }, interval);
  setInterval(() => {
    if (paused || !updatedAt) return;
    const s = Math.round((Date.now() - updatedAt) / 1000);
    $('updated').textContent = s < 2 ? 'updated just now' : `updated ${s} s ago`;
  }, 1000);

  $('pause').addEventListener('click', () => {
    paused = !paused;
    $('pause').textContent = paused ? 'Resume' : 'Pause';
    if (paused) {
      if (source) source.close();
      source = null;
      setConn('paused', 'paused');
    } else {
      setConn('live', 'connecting');
      connect();
    }
  });
  $('prefix').addEventListener('input', () => { history.clear(); customGroups().catch(() => {}); });
  $('sort').addEventListener('change', () => customGroups().catch(() => {}));

  function message(text, error) {
    const m = $('message');
    m.textContent = text;
    m.className = 'message ' + (error ? 'error' : 'ok');
  }

  function select(key) {
    selected = key;
    dirty = false;
    message('');
    $('detail').hidden = false;
    document.querySelector('.columns').classList.add('open');
    $('detail-title').textContent = key;
    for (const tr of $('groups').tBodies[0].rows) tr.classList.toggle('selected', tr.dataset.group === key);
    loadDetail();
  }
  $('detail-close').addEventListener('click', () => {
    selected = null;
    $('detail').hidden = true;
    document.querySelector('.columns').classList.remove('open');
    for (const tr of $('groups').tBodies[0].rows) tr.classList.remove('selected');
  });

  async function loadDetail() {
    const key = selected;
    const res = await fetch(groupAPI(key, '/explain')).catch(() => null);
    if (key !== selected || !res) return;
    if (!res.ok) {
      $('explain').tBodies[0].replaceChildren();
      message(res.status === 404 ? 'This group is gone (evicted or forgotten when idle).' : 'Explain failed: ' + res.status, true);
      return;
    }
    const x = await res.json();
    $('explain').tBodies[0].replaceChildren(...LIMITS.map((k) => el('tr', {},
      el('td', { text: k }), el('td', { class: 'num', text: num(x[k].value) }),
      el('td', {}, el('div', { class: 'stack' }, ...x[k].stack.map((c, i) =>
        el('span', { class: 'choice' + (i ? ' shadowed' : '') }, badge(c.source), el('span', { class: 'v', text: num(c.value) }))))))));
    const form = $('override');
    if (form && !dirty) for (const k of LIMITS) form.elements[k].value = x.override[k] ?? '';
  }

  async function write(method, path, payload, done) {
    const res = await fetch(groupAPI(selected, path), {
      method, headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(payload),
    }).catch((e) => ({ ok: false, status: 0, statusText: String(e), json: async () => ({}) }));
    if (!res.ok) {
      const e = await res.json().catch(() => ({}));
      message(`${res.status || ''} ${e.error || res.statusText}`.trim(), true);
      return;
    }
    dirty = false;
    message(done, false);
    if (path === '/evict') $('detail-close').click();
    else loadDetail();
    if (!source) poll();
  }

  const form = $('override');
  if (form && can.patch) {
    form.addEventListener('input', () => { dirty = true; });
    form.addEventListener('submit', (ev) => {
      ev.preventDefault();
      const patch = {};
      for (const k of LIMITS) {
        const v = form.elements[k].value.trim();
        patch[k] = v === '' ? null : /^-?\d+$/.test(v) ? Number(v) : v;
      }
      write('PATCH', '', patch, 'Override applied.');
    });
    $('drop').addEventListener('click', () => {
      write('PATCH', '', Object.fromEntries(LIMITS.map((k) => [k, null])), 'Overrides dropped.');
    });
  }
  if (can.evict) $('evict').addEventListener('click', () => {
    if (confirm(`Evict ${selected}? Its tasks are cancelled and the group forgotten.`)) write('POST', '/evict', {}, 'Evicted.');
  });
  if (can.shutdown) $('shutdown').addEventListener('click', () => {
    if (confirm(`Cancel every task of ${selected}?`)) write('POST', '/shutdown', {}, 'Tasks cancelled.');
  });

  connect();
})();
