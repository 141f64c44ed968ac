// Helix dashboard: the little the pages need beyond HTML — theme, filters, local times,
// Ctrl-K search, paging a session's events, and the live feed (/api/live, Server-Sent Events).
"use strict";
(function () {
  const $ = (sel, root) => (root || document).querySelector(sel);
  const $$ = (sel, root) => Array.from((root || document).querySelectorAll(sel));
  const root = document.documentElement;

  // -- theme -------------------------------------------------------------------------
  const saved = localStorage.getItem("helix-theme");
  if (saved) root.dataset.theme = saved;
  function toggleTheme() {
    const dark = root.dataset.theme
      ? root.dataset.theme === "dark"
      : matchMedia("(prefers-color-scheme: dark)").matches;
    root.dataset.theme = dark ? "light" : "dark";
    localStorage.setItem("helix-theme", root.dataset.theme);
  }

  // -- local times ---------------------------------------------------------------------
  const pad = (n) => String(n).padStart(2, "0");
  function localTimes(scope) {
    $$("time[datetime]", scope).forEach((el) => {
      const iso = el.getAttribute("datetime");
      if (!iso || iso === "None") return;
      const d = new Date(iso);
      if (isNaN(d)) return;
      const text = el.textContent.trim();
      const day = `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}`;
      const hm = `${pad(d.getHours())}:${pad(d.getMinutes())}`;
      el.title = d.toString();
      if (/^\d\d:\d\d:\d\d$/.test(text)) el.textContent = `${hm}:${pad(d.getSeconds())}`;
      else if (/^\d{4}-\d\d-\d\d$/.test(text)) el.textContent = day;
      else el.textContent = `${day} ${hm}`;
    });
  }

  // -- filters: apply on change, keep URLs short ----------------------------------------
  function filters() {
    const form = $("#filters");
    if (!form) return;
    form.addEventListener("change", () => form.requestSubmit());
    form.addEventListener("submit", () => {
      $$("input, select", form).forEach((el) => {
        if (!el.value || (el.name === "range" && el.value === "30d")) el.disabled = true;
      });
    });
  }

  // -- Ctrl-K search -------------------------------------------------------------------
  function escapeHtml(s) {
    return String(s).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
  }
  function marked(snippet) {
    return escapeHtml(snippet).replace(/\u0002/g, "<mark>").replace(/\u0003/g, "</mark>");
  }
  function sessionUrl(uid, seq) {
    const base = "/sessions/" + encodeURIComponent(uid).replace(/%3A/g, ":");
    return seq === undefined ? base : `${base}?at=${seq}#e-${seq}`;
  }
  function palette() {
    const box = $("#palette");
    const input = $("#palette-input");
    const list = $("#palette-results");
    if (!box) return;
    let timer = null;
    let seq = 0;
    const open = () => { box.hidden = false; input.value = ""; list.innerHTML = ""; input.focus(); };
    const close = () => { box.hidden = true; };
    $("#palette-open").addEventListener("click", open);
    document.addEventListener("keydown", (e) => {
      if ((e.ctrlKey || e.metaKey) && e.key.toLowerCase() === "k") { e.preventDefault(); open(); }
      else if (e.key === "Escape" && !box.hidden) close();
    });
    box.addEventListener("click", (e) => { if (e.target === box) close(); });
    input.addEventListener("input", () => {
      clearTimeout(timer);
      timer = setTimeout(async () => {
        const q = input.value.trim();
        const mine = ++seq;
        if (!q) { list.innerHTML = ""; return; }
        const r = await fetch(`/api/search?limit=8&prefix=1&q=${encodeURIComponent(q)}`);
        if (mine !== seq) return;
        const doc = await r.json();
        list.innerHTML = (doc.hits || []).map((h, i) =>
          `<li><a class="${i ? "" : "sel"}" href="${sessionUrl(h.session_uid, h.seq)}">${marked(h.snippet)}` +
          `<span class="sub">${escapeHtml(h.agent)} · ${escapeHtml(h.repo || "")} · ${escapeHtml(h.title || h.session_uid)}</span></a></li>`
        ).join("") || `<li class="empty">${escapeHtml(doc.error || "No results")}</li>`;
      }, 120);
    });
    input.addEventListener("keydown", (e) => {
      const links = $$("a", list);
      const at = links.findIndex((a) => a.classList.contains("sel"));
      if (e.key === "ArrowDown" || e.key === "ArrowUp") {
        e.preventDefault();
        if (!links.length) return;
        const next = (at + (e.key === "ArrowDown" ? 1 : -1) + links.length) % links.length;
        links.forEach((a) => a.classList.remove("sel"));
        links[next].classList.add("sel");
        links[next].scrollIntoView({ block: "nearest" });
      } else if (e.key === "Enter") {
        e.preventDefault();
        if (at >= 0 && !e.shiftKey) location.href = links[at].href;
        else location.href = "/search?q=" + encodeURIComponent(input.value);
      }
    });
  }

  // -- a session's events: paging, and new ones from the live feed -----------------------
  const session = $("#session");
  let fetching = false;
  async function loadEvents(params, where) {
    if (!session || fetching) return;
    fetching = true;
    try {
      const r = await fetch(`${sessionUrl(session.dataset.uid)}/events?${params}`);
      if (!r.ok) return;
      const tpl = document.createElement("template");
      tpl.innerHTML = await r.text();
      const frag = tpl.content;
      const end = $(".page-end", frag);
      const events = $("#events");
      $$(".ev", frag).forEach((el) => { if (document.getElementById(el.id)) el.remove(); });
      if (where === "before") {
        events.insertBefore(frag, events.firstChild);
      } else {
        $$(".ev", frag).forEach((el) => el.classList.add("fresh"));
        $$(".page-end", events).forEach((el) => el.remove());
        events.appendChild(frag);
      }
      if (end && where !== "before") session.dataset.lastSeq = end.dataset.last;
      localTimes(events);
    } finally {
      fetching = false;
    }
  }
  function paging() {
    if (!session) return;
    document.addEventListener("click", (e) => {
      const b = e.target.closest("button.load");
      if (!b) return;
      b.disabled = true;
      const where = b.dataset.before !== undefined ? "before" : "after";
      loadEvents(where === "before" ? `before=${b.dataset.before}` : `after=${b.dataset.after}`, where)
        .then(() => b.remove());
    });
    const target = location.hash && document.getElementById(location.hash.slice(1));
    if (target) target.scrollIntoView({ block: "center" });
  }
  function atEnd() {
    return !$("button.load[data-after]");
  }

  // -- live feed -------------------------------------------------------------------------
  function fmtMoney(v) { return v >= 0.995 ? "$" + v.toFixed(2) : "$" + Number(v.toFixed(3)); }
  function fmtCompact(v) {
    for (const [u, s] of [["B", 1e9], ["M", 1e6], ["k", 1e3]]) if (Math.abs(v) >= s) return (v / s).toFixed(1).replace(/\.0$/, "") + u;
    return String(Math.round(v));
  }
  function rowHtml(s) {
    const started = s.started_at_iso || "";
    return `<td class="title"><a href="${sessionUrl(s.uid)}">${escapeHtml(s.display_title || s.uid)}</a>` +
      (s.parent_uid ? ' <span class="tag">subagent</span>' : "") + `<div class="sub">${escapeHtml(s.uid)}</div></td>` +
      `<td><span class="agent a-${escapeHtml(s.agent)}">${escapeHtml(s.agent)}</span></td>` +
      `<td class="repo">${escapeHtml(s.repo || "—")}</td>` +
      `<td class="num"><time datetime="${escapeHtml(started)}">${escapeHtml(started.slice(0, 16).replace("T", " "))}</time></td>` +
      `<td class="num">${s.messages}</td><td class="num">${fmtCompact(s.tokens || 0)}</td>` +
      `<td class="num">${fmtMoney(s.cost_usd || 0)}</td>` +
      `<td>${s.outcome ? `<span class="outcome o-${escapeHtml(s.outcome)}">${escapeHtml(s.outcome)}</span>` : ""}</td>`;
  }
  function onSession(kind, s) {
    const table = $("#sessions-table tbody");
    if (table) {
      let row = $(`tr[data-uid="${CSS.escape(s.uid)}"]`, table);
      const firstPage = !new URLSearchParams(location.search).get("offset");
      if (!row && kind === "session:new" && firstPage && s.messages > 0) {
        row = document.createElement("tr");
        row.dataset.uid = s.uid;
        table.insertBefore(row, table.firstChild);
        $$("tr.empty", table).forEach((r) => r.remove());
      }
      if (row) {
        row.innerHTML = rowHtml(s);
        row.classList.remove("flash"); void row.offsetWidth; row.classList.add("flash");
        localTimes(row);
      }
    }
    if (session && s.uid === session.dataset.uid) {
      const total = $("#total-events");
      if (total) total.textContent = s.events;
      if (atEnd()) loadEvents(`after=${session.dataset.lastSeq}`, "after");
    }
  }
  function live() {
    if (!window.EventSource) return;
    const dot = $("#live");
    const es = new EventSource("/api/live");
    const pulse = () => { dot.classList.remove("pulse"); void dot.offsetWidth; dot.classList.add("pulse"); };
    es.addEventListener("hello", () => { dot.classList.add("on"); dot.title = "Live: connected"; });
    es.addEventListener("error", () => { dot.classList.remove("on"); dot.title = "Live: reconnecting…"; });
    for (const kind of ["session:new", "session:updated"]) {
      es.addEventListener(kind, (e) => { pulse(); onSession(kind, JSON.parse(e.data).session); });
    }
    es.addEventListener("metrics:updated", (e) => {
      pulse();
      const m = JSON.parse(e.data).metrics;
      const range = new URLSearchParams(location.search).get("range");
      if (document.body.dataset.view === "overview" && range === "7d" && !location.search.includes("agent=")) {
        const set = (k, v) => { const el = $(`#summary [data-k="${k}"]`); if (el) el.textContent = v; };
        set("sessions", m.sessions); set("messages", fmtCompact(m.messages));
        set("cost", fmtMoney(m.cost_usd)); set("tokens", fmtCompact(m.tokens.total));
      }
    });
    es.addEventListener("resync", () => { dot.title = "Live: much changed — reload for the latest"; pulse(); });
    window.helixLive = es;
  }

  document.addEventListener("DOMContentLoaded", () => {
    $("#theme").addEventListener("click", toggleTheme);
    const zone = $("#zone");
    if (zone) zone.textContent = Intl.DateTimeFormat().resolvedOptions().timeZone || "local time";
    localTimes(document);
    filters();
    palette();
    paging();
    live();
  });
})();
