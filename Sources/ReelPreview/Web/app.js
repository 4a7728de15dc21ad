// The preview page's script (served as /app.js; the content-security policy allows no inline
// script). State arrives on the server-sent-events stream /events, pushed when it changes;
// the controls POST to the same origin, with the cookie the page's address set.
'use strict';
// Loaded from the head, before the picture: the stream opens first, its events wait for the page.
if (location.search.includes('token=')) history.replaceState(null, '', location.pathname);
const events = new EventSource('/events');
let ready = false, newest = null;
events.onmessage = m => { newest = JSON.parse(m.data); if (ready) show(newest); };
const $ = id => document.getElementById(id);
let s = null, r = null;
let last = '', photo = null, gallery = -1, galleryFetch = 0;
// While a slider is held, the stream does not move it under the finger.
const held = { zoom: false, exposure: false };

function clock(seconds) {
  const t = Math.floor(seconds), h = Math.floor(t / 3600), m = Math.floor(t / 60) % 60, x = t % 60;
  return (h ? h + ':' + String(m).padStart(2, '0') : m) + ':' + String(x).padStart(2, '0');
}

function line(j) {
  let t = (j.recording ? '● recording' : '○ not recording') + '  ' + j.elapsed.toFixed(1) + ' s  ' + j.frames + ' frames  ' +
    j.fps.toFixed(1) + ' fps  ' + j.drops + ' dropped  ' + j.ratio +
    (j.poolRemainingCapacity == null ? '' : '  pool ' + (j.poolRemainingCapacity / 1e9).toFixed(2) + ' GB left') +
    (j.poolRemainingSeconds == null ? '' : ' (' + Math.floor(j.poolRemainingSeconds / 60) + ' min)');
  if (j.pressure != null) t += '  pressure ' + j.pressure;
  if (j.zoom != null) t += '  zoom ' + (+j.zoom.toFixed(2)) + '×';
  if (j.exposure != null) t += '  exposure ' + (j.exposure > 0 ? '+' : '') + (+j.exposure.toFixed(2));
  if (j.effect != null) t += '  effect ' + j.effect;
  if (j.audioLevelDb != null) t += '  sound ' + decibels(j.audioLevelDb);
  return t;
}

// The sound's level as the page says it: `-20 dB`, or `silent` at the 16-bit floor.
function decibels(db) { return db <= -96 ? 'silent' : Math.round(db) + ' dB'; }

function slider(name, c, unit) {
  const row = $(name + '-row'), input = $(name), out = $(name + '-v');
  if (!c) { row.hidden = true; return; }
  row.hidden = false;
  input.min = c.minimum; input.max = c.maximum; input.disabled = !c.enabled;
  input.title = c.enabled ? '' : (c.disabledReason || '');
  if (!held[name]) input.value = c.value;
  out.textContent = (name === 'exposure' && c.value > 0 ? '+' : '') + (+c.value.toFixed(2)) + unit;
}

function picker(name, c) {
  const row = $(name + '-row'), sel = $(name);
  if (!c) { row.hidden = true; return; }
  row.hidden = false;
  const titles = c.titles || [];
  if (sel.options.length !== titles.length || titles.some((t, i) => sel.options[i].value !== t)) {
    sel.replaceChildren(...titles.map(t => new Option(t, t)));
  }
  sel.value = c.title; sel.disabled = !c.enabled;
}

// Smart framing's toggles: the `framing` picker's title (off, zoom, rotate, zoom,rotate) as two boxes.
function framingToggles(c) {
  const row = $('framing-row');
  if (!c) { row.hidden = true; return; }
  row.hidden = false;
  const parts = (c.title || 'off').split(',');
  $('auto-zoom').checked = parts.includes('zoom');
  $('auto-rotate').checked = parts.includes('rotate');
  $('auto-zoom').disabled = $('auto-rotate').disabled = !c.enabled;
}

function show(j) {
  last = line(j);
  s.textContent = last;
  const b = $('record');
  b.dataset.recording = String(j.recording);
  b.textContent = j.recording ? 'stop' : 'record';
  const rec = $('rec');
  rec.dataset.recording = String(j.recording);
  rec.textContent = (j.recording ? '● ' : '○ ') + clock(j.elapsed);
  $('f-fps').textContent = j.fps.toFixed(1) + ' fps';
  const reasons = Object.entries(j.dropReasons || {}).filter(([, n]) => n > 0).map(([k, n]) => k + ' ' + n);
  $('f-drops').textContent = j.drops + ' dropped' + (reasons.length ? ' (' + reasons.join(', ') + ')' : '');
  $('f-seams').hidden = !j.seams;
  $('f-seams').textContent = j.seams + (j.seams === 1 ? ' seam' : ' seams') + ': clip ' + (j.seams + 1);
  const p = $('pressure');
  p.hidden = j.pressure == null;
  if (j.pressure != null) { p.textContent = j.pressure; p.dataset.level = j.pressure; }
  const pool = $('f-pool');
  pool.hidden = j.poolRemainingSeconds == null && j.poolRemainingCapacity == null;
  if (j.poolRemainingSeconds != null) pool.textContent = clock(j.poolRemainingSeconds) + ' left';
  else if (j.poolRemainingCapacity != null) pool.textContent = (j.poolRemainingCapacity / 1e9).toFixed(2) + ' GB left';
  // The level meter (with sound only): the loudest sample of the last few tenths of a second.
  $('f-level').hidden = j.audioLevelDb == null;
  if (j.audioLevelDb != null) {
    $('level').value = Math.max(-60, j.audioLevelDb);
    $('level-v').textContent = decibels(j.audioLevelDb);
  }
  for (const x of document.querySelectorAll('button[data-r]')) x.setAttribute('aria-pressed', String(x.dataset.r === j.ratio));
  // The secondary button says what a press does now: marker, lock, unlock (none: hidden).
  const m = $('marker');
  m.hidden = j.secondary === 'none';
  if (j.secondary != null && j.secondary !== 'none') m.textContent = j.secondary;
  const controls = {};
  for (const c of j.controls || []) controls[c.identifier] = c;
  slider('zoom', controls.zoom, '×');
  slider('exposure', controls.exposure, '');
  picker('effect', controls.effect);
  picker('mode', controls.mode);
  framingToggles(controls.framing);
  if (j.gallery !== gallery) { gallery = j.gallery; refreshGallery(); }
  if (j.photo != null && j.photo !== photo) {
    photo = j.photo;
    const t = $('thumb');
    t.src = '/photo.jpg?n=' + encodeURIComponent(j.photo);
    t.hidden = false;
  }
}

// The gallery: fetched again when the status's `gallery` count moves (a clip finished, a
// photo saved). Items already shown stay (a playing video is not replaced).
function megabytes(n) { return n >= 1e6 ? (n / 1e6).toFixed(1) + ' MB' : Math.max(1, Math.round(n / 1e3)) + ' kB'; }

function galleryItem(i) {
  const li = document.createElement('li');
  li.className = 'item'; li.dataset.id = i.id; li.dataset.kind = i.kind;
  if (i.playable) {
    const v = document.createElement('video');
    v.controls = true; v.muted = true; v.preload = 'metadata'; v.playsInline = true;
    v.poster = i.thumbnail; v.src = i.download;
    li.append(v);
  } else {
    const img = document.createElement('img');
    img.src = i.thumbnail; img.alt = i.name; img.loading = 'lazy';
    li.append(img);
  }
  const meta = document.createElement('div');
  meta.className = 'meta';
  const facts = [i.name, megabytes(i.bytes), i.ratio, i.width + '×' + i.height];
  if (i.kind === 'clip') facts.push(i.seconds.toFixed(1) + ' s', i.frames + ' frames');
  facts.push(i.codec + (i.kind === 'clip' && !i.playable ? ' (download only)' : ''));
  meta.textContent = facts.join(' · ');
  const a = document.createElement('a');
  a.href = i.download + '?download=1'; a.download = i.name; a.textContent = 'download';
  li.append(meta, a);
  return li;
}

async function refreshGallery() {
  // Fetches may overlap (a clip finished and the oldest deleted, moments apart): only the
  // newest one's list is shown, so an older answer never brings a deleted clip back.
  const n = ++galleryFetch;
  let items;
  try {
    const x = await fetch('/gallery');
    if (!x.ok) return;
    items = (await x.json()).items;
  } catch (e) {
    return;   // the server went away: the status line says so (events.onerror)
  }
  if (n !== galleryFetch) return;
  const list = $('g-list'), shown = new Set([...list.children].map(li => li.dataset.id));
  const listed = new Set(items.map(i => i.id));
  for (const li of [...list.children]) if (!listed.has(li.dataset.id)) li.remove();   // deleted (--keep)
  for (const i of items) if (!shown.has(i.id)) list.append(galleryItem(i));
  $('g-count').textContent = String(items.length);
}

events.onerror = () => { if (ready) s.textContent = (last ? last + '  ' : '') + '(disconnected)'; };

async function post(path) {
  const x = await fetch(path, { method: 'POST' });
  const t = await x.text();
  r.textContent = path.split('?')[0] + ': ' + x.status + ' ' + t;
  r.dataset.status = x.status;
  return t;
}

function init() {
  s = $('s'); r = $('r');
  for (const b of document.querySelectorAll('button[data-r]')) b.onclick = () => post('/ratio?to=' + b.dataset.r);
  $('shutter').onclick = () => post('/shutter');
  $('record').onclick = () => post('/record?action=toggle');
  $('marker').onclick = () => post('/press?action=secondary');
  for (const name of ['zoom', 'exposure']) {
    const input = $(name);
    input.onpointerdown = () => { held[name] = true; };
    input.onpointerup = input.onpointercancel = () => { held[name] = false; };
    input.oninput = () => { $(name + '-v').textContent = (+(+input.value).toFixed(2)) + (name === 'zoom' ? '×' : ''); };
    input.onchange = () => { held[name] = false; post('/control?name=' + name + '&value=' + encodeURIComponent(input.value)); };
  }
  for (const name of ['effect', 'mode']) {
    $(name).onchange = () => post('/control?name=' + name + '&value=' + encodeURIComponent($(name).value));
  }
  for (const box of ['auto-zoom', 'auto-rotate']) {
    $(box).onchange = () => {
      const parts = [$('auto-zoom').checked ? 'zoom' : null, $('auto-rotate').checked ? 'rotate' : null].filter(Boolean);
      post('/control?name=framing&value=' + encodeURIComponent(parts.length ? parts.join(',') : 'off'));
    };
  }
  ready = true;
  if (newest) show(newest);
}
document.addEventListener('DOMContentLoaded', init);
