/* Finished games with their block and log (who corrected or undid what, from which phone),
   statistics per player, export/import as kniffel-record/1, rematch. */
"use strict";

(() => {
  const k = K;
  const $ = (id) => document.getElementById(id);
  let games = [];
  let stats = [];
  let detail = null;

  function describe(e, kids) {
    const p = e.payload || {};
    const L = (b) => k.label(b, kids);
    const dice = (d) => (d || []).map((v) => (v === null ? "?" : k.faceName(v, kids))).join(" ");
    switch (e.kind) {
      case "throw": case "reread": return `${p.player || ""}: ${dice(p.dice)}${p.held && p.held.length ? ` (${k.t("held")}: ${p.held.map((i) => i + 1).join(",")})` : ""}`;
      case "pending": return `${dice(p.dice)} – ${k.pendingLines(e.pending).join("; ")}`;
      case "correct": return `${p.player || ""}: ${k.t("pick_value", {n: p.index + 1}).replace(/:.*$/, "")}: ${p.was === null || p.was === undefined ? "?" : k.faceName(p.was, kids)} → ${k.faceName(p.value, kids)}`;
      case "announce": return `${p.player || ""}: ${L(p.box)}`;
      case "enter": return `${p.player || ""}: ${L(p.box)}${p.scratch ? " (" + k.t("scratch") + ")" : ""}`;
      case "undo": return p.undone ? k.undoText(p.undone, kids) : "";
      case "players": return (p.players || []).join(", ");
      default: return "";
    }
  }

  function renderDetail() {
    const box = $("detail");
    if (!detail) { box.hidden = true; return; }
    const kids = detail.sheet.kids;
    const important = new Set(["correct", "undo", "dismiss", "players", "reread"]);
    const log = detail.log.map((e) => `<tr class="${important.has(e.kind) ? "important" : ""}">
      <td>${e.seq}</td><td>${new Date(e.time * 1000).toLocaleTimeString(k.lang === "de" ? "de-DE" : "en-GB")}</td>
      <td>${k.esc(k.kind(e.kind))}</td><td>${k.esc(describe(e, kids))}</td><td>${k.esc(k.actor(e.by))}</td></tr>`).join("");
    box.hidden = false;
    box.innerHTML = `<div class="row-buttons"><h3>#${detail.id} · ${k.esc(k.time(detail.created))}${detail.finished ? "" : " · " + k.esc(k.t("open"))}</h3>
      <a class="secondary button" href="/api/games/${detail.id}/record?download=1">↓ ${k.esc(k.t("export"))}</a>
      <button class="primary" id="rematch">⟳ ${k.esc(k.t("rematch"))}</button>
      <button class="secondary" id="close-detail">${k.esc(k.t("back"))}</button></div>
      <div class="paper">${k.block(detail.block, detail.sheet, {preview: false})}</div>
      <h3>${k.esc(k.t("log"))}</h3>
      <div class="scroll"><table class="log"><tbody>${log}</tbody></table></div>`;
    $("close-detail").onclick = () => { detail = null; history.replaceState(null, "", "/history"); renderDetail(); };
    $("rematch").onclick = async () => {
      const r = await k.api("POST", `/api/games/${detail.id}/rematch`, {});
      if (r.ok) location.href = "/phone";
      else k.toast(k.errorText(r.error), "error");
    };
  }

  function render() {
    $("title").textContent = k.t("history");
    $("games-title").textContent = k.t("games");
    $("import-label").textContent = "↑ " + k.t("import");
    const pct = (x) => (x === null || x === undefined ? "–" : Math.round(x * 100) + " %");
    $("stats").innerHTML = `<h3>${k.esc(k.t("stats"))}</h3>` + (stats.length ? `<div class="scroll"><table class="stats">
      <thead><tr><th></th><th>${k.esc(k.t("games"))}</th><th>${k.esc(k.t("wins"))}</th><th>${k.esc(k.t("average"))}</th>
      <th>${k.esc(k.t("best"))}</th><th>${k.esc(k.t("bonus_rate"))}</th><th>${k.esc(k.t("kniffels"))}</th></tr></thead>
      <tbody>${stats.map((s) => `<tr><th>${k.esc(s.name)}</th><td>${s.games}</td><td>${s.wins}</td><td>${s.average}</td><td>${s.best}</td><td>${pct(s.bonus_rate)}</td><td>${s.kniffels}</td></tr>`).join("")}</tbody></table></div>`
      : `<p class="hint">${k.esc(k.t("history_empty"))}</p>`);
    $("games").innerHTML = games.length ? `<ul class="game-list">${games.map((g) => `<li><a href="#${g.id}" data-id="${g.id}" class="game-item${g.current ? " current" : ""}">
      <span class="gdate">#${g.id} · ${k.esc(k.time(g.created))} · ${k.esc(g.rules)}${g.finished ? "" : ` · <em>${k.esc(k.t("open"))}</em>`}</span>
      <span class="gplayers">${g.players.map((p) => `${g.winners.includes(p.name) ? "🏆 " : ""}${k.esc(p.name)} <b>${p.total}</b>`).join(" · ")}</span></a></li>`).join("")}</ul>`
      : `<p class="hint">${k.esc(k.t("history_empty"))}</p>`;
    $("games").querySelectorAll("[data-id]").forEach((a) => { a.onclick = (e) => { e.preventDefault(); show(+a.dataset.id); }; });
    renderDetail();
  }

  async function show(id) {
    const r = await k.api("GET", `/api/games/${id}/detail`);
    if (!r.ok) { k.toast(k.errorText(r.error), "error"); return; }
    detail = r.data;
    history.replaceState(null, "", `/history#${id}`);
    renderDetail();
    $("detail").scrollIntoView({behavior: "smooth"});
  }

  async function load() {
    const [g, s] = await Promise.all([k.api("GET", "/api/games"), k.api("GET", "/api/stats")]);
    if (g.ok) games = g.data.games;
    if (s.ok) stats = s.data.players;
    render();
  }

  $("import").addEventListener("change", async (e) => {
    const file = e.target.files[0];
    if (!file) return;
    let record;
    try { record = JSON.parse(await file.text()); } catch (err) { k.toast(String(err), "error"); return; }
    const r = await k.api("POST", "/api/games/import", record);
    e.target.value = "";
    if (!r.ok) { k.toast(k.errorText(r.error), "error"); return; }
    await load();
    show(r.data.imported);
  });

  async function start() {
    k.langButton($("lang"), render);
    await k.loadRules();
    await load();
    const id = parseInt(location.hash.slice(1), 10);
    if (id) show(id);
  }
  start();
})();
