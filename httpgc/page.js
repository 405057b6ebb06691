// page.js fetches and acts: the stream of snapshots (api/events), polling
// when the stream is closed or late, the detail panel and the writes. Every URL is
// relative, so the page works wherever the handler is mounted. It follows
// view.js in one scope.
const LIMITS = ['maxConcurrency', 'maxInFlight', 'queueThreshold', 'weight'];

// lastMsg is when the stream last sent a snapshot, and due how long that
// one said the next would take (nextMs).
let paused = false, source = null, lastMsg = Date.now(), due = interval, lastTry = 0, updatedAt = 0;
let prevStats = null, prevAt = 0, selected = null, dirty = false;
let shown = { rows: [], total: 0 }; // the rows drawn last

const CARDS = [
  ['groups', 'Groups'], ['running', 'Running'], ['waiting', 'Waiting'], ['blocked', 'Blocked'], ['inflight', 'In flight'],
  ['submitted', 'Submitted'], ['succeeded', 'Succeeded'], ['failed', 'Failed'], ['cancelled', 'Cancelled'], ['rejected', 'Rejected'],
];
const RATED = new Set(['submitted', 'succeeded', 'failed', 'cancelled', 'rejected']);

function renderTotals(s, history) {
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
    if (k === 'waiting' && history && history.waiting.length) {
      card.append(spark(history.waiting, Math.max(1, ...history.waiting), Math.max(60, history.waiting.length), 'waiting, all groups'));
    }
    return card;
  });
  $('totals').replaceChildren(...cards);
  $('isolation').textContent = 'isolation: ' + s.isolation;
  prevStats = s;
  prevAt = now;
}

const customView = () => $('prefix').value !== '' || $('sort').value !== 'oldestWait';
async function getJSON(url) {
  const res = await fetch(url, { headers: { Accept: 'application/json' } });
  if (!res.ok) throw new Error(url + ': ' + res.status);
  return res.json();
}
async function customGroups() {
  const q = new URLSearchParams({ sort: $('sort').value, prefix: $('prefix').value, limit: String(rowLimit) });
  const g = await getJSON('api/groups?' + q);
  draw(g.groups, g.total);
}
function draw(rows, total) {
  shown = { rows, total };
  renderGroups(rows, total);
}

async function onSnapshot(s) {
  updatedAt = Date.now();
  renderTotals(s.stats, s.history);
  if (customView()) await customGroups().catch(() => {});
  else draw(s.groups, s.stats.groups);
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
    const s = JSON.parse(ev.data);
    lastMsg = Date.now();
    due = Number(s.nextMs) || interval;
    setConn('live', 'live');
    onSnapshot(s);
  });
  source.addEventListener('warnings', (ev) => renderWarnings(JSON.parse(ev.data)));
  source.onerror = () => {
    if (source && source.readyState === EventSource.CLOSED) source = null;
  };
}

async function poll() {
  try {
    const [stats, groups, warnings] = await Promise.all([
      getJSON('api/stats'), getJSON('api/groups?limit=' + rowLimit), getJSON('api/warnings')]);
    setConn('polling', 'polling');
    await onSnapshot({ stats, groups: groups.groups });
    renderWarnings(warnings.warnings);
  } catch (e) {
    setConn('down', 'unreachable');
  }
}

// late reports whether the stream's next snapshot is overdue: it is not
// there when the last one said, with a margin for its build and the
// network. A slow stream that keeps its word is not polled over.
const late = () => Date.now() - lastMsg > due + Math.max(1.5 * interval, due / 2);

// Every interval: poll while the stream is late or closed, and try the
// stream again now and then once it has given up.
setInterval(() => {
  if (paused) return;
  if (late()) poll();
  if (!source && Date.now() - lastTry > 30000) connect();
}, interval);
setInterval(() => {
  if (paused || !updatedAt) return;
  const s = Math.round((Date.now() - updatedAt) / 1000);
  $('updated').textContent = s < 2 ? 'updated just now' : `updated ${s} s ago`;
}, 1000);

$('pause').addEventListener('click', () => {
  paused = !paused;
  $('pause').textContent = paused ? 'Resume updates' : 'Pause updates';
  if (paused) {
    if (source) source.close();
    source = null;
    setConn('paused', 'updates paused');
  } else {
    setConn('live', 'connecting');
    connect();
  }
});
$('prefix').addEventListener('input', () => customGroups().catch(() => {}));
$('sort').addEventListener('change', () => customGroups().catch(() => {}));

function message(text, error) {
  const m = $('message');
  m.textContent = text;
  m.className = 'message ' + (error ? 'error' : 'ok');
}

// notice shows, above the table, a write's failure to key that no panel
// shows: a row's button, or a panel since closed or moved to another group.
// The key is cut at 80 characters, as it may be very long. No key hides it.
function notice(key, text) {
  const n = $('notice');
  n.replaceChildren(...(key == null ? [] : [keyName(key, '', 80), ': ' + text]));
  n.hidden = key == null;
}

// send makes a write. A fetch that fails (the network, or a URL the
// browser refuses) answers with status 0.
const send = (url, method, payload) => fetch(url, {
  method, headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(payload),
}).catch((e) => ({ ok: false, status: 0, statusText: String(e), json: async () => ({}) }));

// failure says why a write failed: its status and the server's error. A
// name too long for a URL (431, 414) is refused before the handler.
async function failure(res) {
  const e = await res.json().catch(() => ({}));
  const why = res.status === 431 || res.status === 414 ? 'the group\'s name is too long for a URL' : e.error || res.statusText || 'failed';
  return `${res.status || ''} ${why}`.trim();
}

function select(key) {
  selected = key;
  dirty = false;
  message('');
  $('detail').hidden = false;
  document.querySelector('.columns').classList.add('open');
  $('detail-title').replaceChildren(keyName(key));
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

// write writes to the selected group. Its answer acts on the panel only if
// the panel still shows that group: the operator may have moved on.
async function write(method, path, payload, done) {
  const key = selected;
  const res = await send(groupAPI(key, path), method, payload);
  if (!res.ok) {
    const why = await failure(res);
    if (selected === key) message(why, true);
    else notice(key, why);
    return;
  }
  if (selected === key) {
    dirty = false;
    message(done, false);
    if (path === '/evict') $('detail-close').click();
    else loadDetail();
  }
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
// setPaused pauses or resumes a group from its row's button, and redraws
// the row from the reply at once.
async function setPaused(key, pause) {
  const res = await send(groupAPI(key), 'PATCH', { paused: pause });
  if (!res.ok) {
    notice(key, `${pause ? 'pausing' : 'resuming'} failed: ${await failure(res)}`);
    return;
  }
  notice();
  const row = await res.json();
  draw(shown.rows.map((r) => (r.group === key ? row : r)), shown.total);
}

if (can.evict) $('evict').addEventListener('click', () => {
  if (confirm(`Evict ${shownKey(selected)}? Its tasks are cancelled and the group forgotten.`)) write('POST', '/evict', {}, 'Evicted.');
});
if (can.shutdown) $('shutdown').addEventListener('click', () => {
  if (confirm(`Cancel every task of ${shownKey(selected)}?`)) write('POST', '/shutdown', {}, 'Tasks cancelled.');
});

connect();
