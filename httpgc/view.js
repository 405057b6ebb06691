// view.js draws what the server sends: the totals, the groups' rows with
// why they wait, and the warnings. page.js, which follows it in the same
// scope, fetches and acts. Group keys are shown through textContent only,
// by keyName: their invisible and look-alike characters escaped.
const body = document.body;
const interval = Number(body.dataset.intervalMs) || 1000;
const rowLimit = Number(body.dataset.rows) || 100; // Options.Rows: a snapshot's rows
const can = { patch: body.dataset.patch === 'true', evict: body.dataset.evict === 'true', shutdown: body.dataset.shutdown === 'true' };
const $ = (id) => document.getElementById(id);
const nf = new Intl.NumberFormat('en-US');

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

// A key is shown so that no two keys look alike and none reorders the text
// around it. Each character that is invisible, blank or a control (Unicode's
// C and Z categories and default ignorables: zero-width and bidi controls,
// U+FEFF, soft hyphens, NBSP and other spaces, line separators), a space
// that leads, trails or follows another, a backslash, and, in a word that
// has Latin letters, a Cyrillic, Greek, Armenian or Cherokee letter, is
// shown escaped as Go's strconv.Quote writes it (\u200b, \t, \x1b,
// \U000e0001, \\) in a span of class esc. The key's element is isolated
// (dir=auto, class keytext). keyParts returns the runs of the key's first
// max characters, each with whether it is escaped.
const HIDE = /[\p{C}\p{Z}\p{Default_Ignorable_Code_Point}\u2800\\]/u, LATIN = /\p{Script=Latin}/u, WORD = /[\p{L}\p{M}]/u;
const ALIKE = /[\p{Script=Cyrillic}\p{Script=Greek}\p{Script=Armenian}\p{Script=Cherokee}]/u;
const SHORT = { 7: 'a', 8: 'b', 9: 't', 10: 'n', 11: 'v', 12: 'f', 13: 'r', 0x5c: '\\' };
function escapeOf(c) {
  const hex = (n) => '\\' + (n === 2 ? 'x' : n === 4 ? 'u' : 'U') + c.toString(16).padStart(n, '0');
  return SHORT[c] ? '\\' + SHORT[c] : hex(c < 0x20 || c === 0x7f ? 2 : c < 0x10000 ? 4 : 8);
}
function keyParts(key, max) {
  const cs = [...key], n = Math.min(cs.length, max ?? Infinity), out = [];
  const alike = new Array(n).fill(false); // a look-alike letter in a Latin word
  if (LATIN.test(key) && ALIKE.test(key)) {
    for (let i = 0, j; i < n; i = Math.max(j, i + 1)) {
      for (j = i; j < cs.length && WORD.test(cs[j]); j++);
      const w = cs.slice(i, j).join('');
      if (LATIN.test(w)) for (let k = i; k < Math.min(j, n); k++) alike[k] = ALIKE.test(cs[k]);
    }
  }
  for (let i = 0; i < n; i++) {
    const c = cs[i], esc = c === ' ' ? i === 0 || i === cs.length - 1 || cs[i - 1] === ' ' || cs[i + 1] === ' '
      : alike[i] || HIDE.test(c);
    const s = esc ? escapeOf(c.codePointAt(0)) : c, last = out[out.length - 1];
    if (last && last[1] === esc) last[0] += s;
    else out.push([s, esc]);
  }
  return out;
}
// shownKey is key as text (for a title or a dialog), between U+2068 and
// U+2069 so that its letters, right-to-left ones too, keep to themselves.
const shownKey = (key) => '\u2068' + keyParts(key).map((p) => p[0]).join('') + '\u2069';
// keyName is key's element, with cls added to its class. A key over max
// characters is cut, with an ellipsis after the element.
function keyName(key, cls, max) {
  const e = el('span', { class: 'keytext' + (cls ? ' ' + cls : ''), dir: 'auto' });
  for (const [s, esc] of keyParts(key, max)) e.append(esc ? el('span', { class: 'esc', text: s }) : s);
  if (max == null || [...key].length <= max) return e;
  const f = document.createDocumentFragment();
  f.append(e, '…');
  return f;
}
function dur(ms) {
  if (ms < 1000) return ms + ' ms';
  if (ms < 60000) return (ms / 1000).toFixed(ms < 10000 ? 1 : 0) + ' s';
  return Math.floor(ms / 60000) + ' m ' + Math.round((ms % 60000) / 1000) + ' s';
}
// A group's URL names it in the query: a browser would resolve a path
// segment such as "." or "..", escaped or not.
const groupAPI = (key, action) => 'api/group' + (action || '') + '?group=' + encodeURIComponent(key);
const badge = (src) => el('span', { class: 'src src-' + src, text: src, title: 'set by: ' + src });

// meter shows v against max: a bar, the figures and what set max. A full
// bar is amber where being full is normal work (running), red where it
// turns tasks away or holds them (in flight, waiting).
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

// spark draws values (oldest first, one per interval) against top, in
// slots places: every row shares one top, so their heights compare.
function spark(values, top, slots, what) {
  const NS = 'http://www.w3.org/2000/svg', w = 90, h = 24;
  const svg = document.createElementNS(NS, 'svg');
  for (const [k, v] of Object.entries({ width: w, height: h, viewBox: `0 0 ${w} ${h}`, class: 'spark' })) svg.setAttribute(k, v);
  if (!values || values.length === 0) return svg;
  const step = w / Math.max(1, slots - 1);
  const pts = values.map((v, i) => [w - (values.length - 1 - i) * step, h - 1 - (v / top) * (h - 3)]);
  const line = pts.map((p) => p[0].toFixed(1) + ',' + p[1].toFixed(1)).join(' ');
  const area = document.createElementNS(NS, 'polygon');
  area.setAttribute('points', `${line} ${w},${h} ${pts[0][0].toFixed(1)},${h}`);
  const pl = document.createElementNS(NS, 'polyline');
  pl.setAttribute('points', line);
  const title = document.createElementNS(NS, 'title');
  title.textContent = `${what}: now ${values[values.length - 1]}, peak ${Math.max(...values)} (scale 0–${top})`;
  svg.append(title, area, pl);
  return svg;
}

// whyCell shows the server's reason, and "hung" before it when the group
// runs at its limit, runs long and finishes nothing. The pause button, if
// writes are allowed, sits at its right.
const WHY_TITLES = {
  'paused': 'the group, or a parent, is paused: its tasks wait until it is resumed',
  'global cap': 'some of its tasks wait for a permit of the global cap (GlobalMaxInFlight)',
  'running long': 'its oldest running task has run longer than Options.LongRun',
  'own limit': 'tasks wait for the group\'s own limits, or where its counts cannot tell',
  'parent limit': 'its first task waits at the ancestor named: at its bulkhead, or at its concurrency limit while the group\'s own has room',
};
function whyCell(r, button) {
  const box = el('div', { class: 'whybox' });
  const td = el('td', { class: 'why' }, box);
  if (r.hung) box.append(el('span', { class: 'why-tag why-hung', text: 'hung', title: 'at its limit, running long, and none of its tasks finished lately' }));
  if (r.why) {
    const kind = Object.keys(WHY_TITLES).find((k) => r.why.startsWith(k)) || 'own limit';
    const tag = el('span', { class: 'why-tag why-' + kind.replace(' ', '-'), title: WHY_TITLES[kind] });
    if (kind === 'parent limit' && r.why.startsWith('parent limit: ')) tag.append('parent limit: ', keyName(r.why.slice(14)));
    else if (r.pausedBy) tag.append('paused by ', keyName(r.pausedBy));
    else tag.textContent = r.why;
    box.append(tag);
  }
  if (button) box.append(button);
  return td;
}

// recentCell shows what became of the group's tasks over the last minute.
function recentCell(r) {
  const td = el('td', { class: 'recent nowrap' });
  const x = r.recent;
  if (!x || x.seconds < 1) {
    td.textContent = '–';
    return td;
  }
  td.title = `over the last ${Math.round(x.seconds)} s: ${x.succeeded} succeeded, ${x.failed} failed, ${x.cancelled} cancelled, ${x.rejected} rejected`;
  td.append(el('span', { class: 'done', text: nf.format(x.succeeded + x.failed + x.cancelled) + ' done' }));
  if (x.failed) td.append(' · ', el('span', { class: 'bad', text: nf.format(x.failed) + ' failed' }));
  if (x.rejected) td.append(' · ', el('span', { class: 'bad', text: nf.format(x.rejected) + ' rej.', title: 'rejected' }));
  return td;
}

// pauseButton pauses or resumes the row's group through a PATCH. It
// shows the group's own pause: a group paused by an ancestor alone offers
// Pause, since resuming it would start nothing.
function pauseButton(r) {
  const own = r.paused && !r.pausedBy;
  const b = el('button', { type: 'button', class: 'rowpause' + (own ? ' on' : ''), text: own ? 'Resume' : 'Pause',
    title: own ? 'let the group start tasks again' : 'start none of the group\'s tasks until resumed' });
  b.addEventListener('click', (ev) => {
    ev.stopPropagation();
    setPaused(r.group, !own);
  });
  return b;
}

// The groups' tree. A row whose group has children in the list gets a
// disclosure button. Its children's rows are hidden until it is opened,
// then drawn indented under it. Siblings keep the server's order, so each
// level sorts as the list does: by oldest wait, a parent's covers its
// subtree. The open rows are kept by name across every redraw. A prefix
// filter opens every level, so that its matches show. A row whose parent
// is not in the list sits at the top.
const expanded = new Set();

// tree returns rows in the order drawn, each with its depth, its count of
// children and whether a closed ancestor hides it.
function tree(rows) {
  const names = new Set(rows.map((r) => r.group)), kids = new Map(), seen = new Set(), out = [];
  const openAll = $('prefix').value !== '';
  for (const r of rows) {
    if (!r.parent || !names.has(r.parent) || r.parent === r.group) continue;
    if (!kids.has(r.parent)) kids.set(r.parent, []);
    kids.get(r.parent).push(r);
  }
  const walk = (r, depth, hidden) => {
    if (seen.has(r)) return;
    seen.add(r);
    const children = kids.get(r.group) || [], open = openAll || expanded.has(r.group);
    out.push({ r, depth, hidden, children: children.length, open });
    for (const c of children) walk(c, depth + 1, hidden || !open);
  };
  for (const r of rows) if (!r.parent || !names.has(r.parent) || r.parent === r.group) walk(r, 0, false);
  for (const r of rows) walk(r, 0, false); // names that loop through DisplayKey
  return out;
}

// toggle opens or closes group's row. From the keyboard, the redrawn row
// takes the focus back.
function toggle(group, open, keyboard) {
  if (open) expanded.add(group);
  else expanded.delete(group);
  draw(shown.rows, shown.total);
  if (keyboard) for (const tr of $('groups').tBodies[0].rows) if (tr.dataset.group === group) tr.focus();
}

// keyCell names the group, indented by its depth, with the disclosure
// button of a parent.
function keyCell(n, nested) {
  const r = n.r;
  const key = el('td', { class: 'key', title: shownKey(r.group) + (r.parent ? ' (in ' + shownKey(r.parent) + ')' : '') });
  if (nested) key.style.paddingLeft = (6 + n.depth * 18) + 'px';
  if (n.children) {
    const b = el('button', { type: 'button', class: 'twisty', 'aria-expanded': String(n.open), text: n.open ? '▾' : '▸',
      title: (n.open ? 'hide' : 'show') + ` the ${n.children} group${n.children === 1 ? '' : 's'} under ${shownKey(r.group)}` });
    b.addEventListener('click', (ev) => {
      ev.stopPropagation();
      toggle(r.group, !n.open, ev.detail === 0);
    });
    b.addEventListener('keydown', (ev) => ev.stopPropagation());
    key.append(b);
  } else if (nested) key.append(el('span', { class: 'twisty' }));
  key.append(keyName(r.group, 'name')); // only the name is cut short
  if (n.children) key.append(' ', el('span', { class: 'kids', text: '(' + n.children + ')' }));
  if (r.paused) key.append(' ', el('span', { class: 'badge paused', text: 'paused' }));
  return key;
}

function renderGroups(rows, total) {
  const top = Math.max(1, ...rows.flatMap((r) => r.history || []));
  const slots = Math.max(60, ...rows.map((r) => (r.history || []).length));
  $('scale').textContent = `0–${nf.format(top)}, all rows`;
  const nodes = tree(rows), nested = nodes.some((n) => n.children);
  const trs = nodes.map((n) => {
    const r = n.r, wait = r.oldestWaitMs, run = r.oldestRunningMs;
    const tr = el('tr', { tabindex: '0', 'data-group': r.group, 'data-depth': String(n.depth) },
      keyCell(n, nested), whyCell(r, can.patch ? pauseButton(r) : null),
      el('td', {}, meter(r.running, r.maxConcurrency, r.source.maxConcurrency, true)),
      el('td', {}, meter(r.inFlight, r.maxInFlight, r.source.maxInFlight)),
      el('td', {}, meter(r.waiting, r.queueThreshold, r.source.queueThreshold)),
      el('td', { class: 'num' + (wait >= 5000 ? ' wait-long' : wait >= 1000 ? ' wait-some' : ''), text: wait ? dur(wait) : '–' }),
      el('td', { class: 'num oldest-run' + (r.why.startsWith('running long') ? ' wait-long' : ''), text: run ? dur(run) : '–' }),
      recentCell(r),
      el('td', { class: 'history' }, spark(r.history, top, slots, 'waiting')));
    tr.hidden = n.hidden;
    if (n.depth) tr.classList.add('child');
    if (r.hung) tr.classList.add('hung');
    if (r.group === selected) tr.classList.add('selected');
    tr.addEventListener('click', () => select(r.group));
    tr.addEventListener('keydown', (ev) => {
      if (ev.key === 'Enter') select(r.group);
      else if (n.children && (ev.key === 'ArrowRight' || ev.key === 'ArrowLeft')) toggle(r.group, ev.key === 'ArrowRight', true);
    });
    return tr;
  });
  $('groups').tBodies[0].replaceChildren(...trs);
  $('nogroups').hidden = rows.length > 0;
  const closed = nodes.filter((n) => n.hidden).length;
  $('shown').textContent = `${nf.format(total)} group${total === 1 ? '' : 's'}, ${rows.length - closed} shown` +
    (closed ? `, ${closed} in closed groups` : '');
}

// renderWarnings shows the kept warnings summed up by group at the top,
// with the full list in a details element below the summary.
function renderWarnings(list) {
  const byGroup = new Map();
  for (const w of list) { // newest first
    const g = byGroup.get(w.group) || { group: w.group, count: 0, last: w };
    g.count++;
    byGroup.set(w.group, g);
  }
  const pick = (key) => {
    const td = el('td', { class: 'key', title: shownKey(key) }, keyName(key));
    td.addEventListener('click', () => select(key));
    return td;
  };
  $('warnsummary').tBodies[0].replaceChildren(...[...byGroup.values()].map((g) => el('tr', { 'data-group': g.group },
    pick(g.group), el('td', { class: 'num', text: nf.format(g.count) }),
    el('td', { class: 'nowrap', text: new Date(g.last.at).toLocaleTimeString() }),
    el('td', {}, el('span', { class: 'badge', text: g.last.trigger })),
    el('td', { class: 'num', text: num(g.last.waiting) }), el('td', { class: 'num', text: dur(g.last.oldestWaitMs) }))));
  $('warnings').tBodies[0].replaceChildren(...list.map((w) => el('tr', {},
    el('td', { class: 'nowrap', text: new Date(w.at).toLocaleTimeString() }), pick(w.group),
    el('td', {}, el('span', { class: 'badge', text: w.trigger })),
    el('td', { class: 'num', text: num(w.waiting) }), el('td', { class: 'num', text: dur(w.oldestWaitMs) }),
    el('td', { class: 'num', text: num(w.limit) }), el('td', { class: 'num', text: num(w.inFlight) }),
    el('td', { class: 'num', text: num(w.suppressed) }))));
  $('warnsummary').hidden = list.length === 0;
  $('warnall').hidden = list.length === 0;
  $('nowarnings').hidden = list.length > 0;
  $('warncount').textContent = list.length ? `${list.length} kept, from ${byGroup.size} group${byGroup.size === 1 ? '' : 's'}` : '';
  $('warnall-count').textContent = `all ${list.length}, newest first`;
}
