/* The phone: join with the PIN or the QR code, fix a die (tap it, pick the value), choose a
   box (tap, confirm), undo, start a new game, rename players, see the camera. Everything goes
   through the JSON API with the version the phone last saw, so two phones never overwrite
   each other silently. */
"use strict";

(() => {
  const k = K;
  const $ = (id) => document.getElementById(id);
  let state = null;
  let me = null;
  let selected = null;   // {box, column, scratch}
  let mode = "enter";    // enter | scratch | announce
  let busy = false;
  let connected = true;

  /* ---- joining -------------------------------------------------------------------- */

  function showJoin(errorText) {
    $("join-screen").hidden = false;
    $("game-screen").hidden = true;
    $("join-title").textContent = k.t("join_title");
    $("pin-label").textContent = k.t("pin");
    $("name-label").textContent = k.t("name");
    $("join-button").textContent = k.t("join");
    $("join-hint").textContent = k.t("join_hidden");
    $("join-error").textContent = errorText || "";
    $("phone-name").value = localStorage.getItem("kniffel-phone-name") || "";
  }

  async function joinWith(body) {
    const r = await k.api("POST", "/api/session", body);
    if (!r.ok) {
      showJoin(k.errorText(r.error));
      return false;
    }
    me = r.data.phone;
    return true;
  }

  $("join-form").addEventListener("submit", async (e) => {
    e.preventDefault();
    const name = $("phone-name").value.trim();
    if (name) localStorage.setItem("kniffel-phone-name", name);
    const body = {pin: $("pin").value.trim()};
    if (name) body.name = name;
    if (await joinWith(body)) enterGame();
  });

  /* ---- the game ------------------------------------------------------------------- */

  function enterGame() {
    $("join-screen").hidden = true;
    $("game-screen").hidden = false;
    k.live((s) => { state = s; render(); }, (ok) => { connected = ok; renderStatus(); });
  }

  async function send(kind, body) {
    if (busy || !state) return null;
    busy = true;
    document.body.classList.add("busy");
    const r = await k.api("POST", `/api/games/${state.game.id}/${kind}`, {version: state.game.version, ...body});
    busy = false;
    document.body.classList.remove("busy");
    if (r.ok) {
      state = r.data;
      selected = null;
      mode = "enter";
      render();
      return r.data;
    }
    if (r.status === 409 && r.data && r.data.state) {
      state = r.data.state;
      selected = null;
      render();
      k.toast(k.t("conflict"), "warn");
    } else if (r.status === 401) {
      showJoin(k.t("not_joined"));
    } else {
      k.toast(k.errorText(r.error), "error");
    }
    return null;
  }

  function renderStatus() {
    if (!state) return;
    const line = $("status-line");
    const bits = [];
    if (!connected) bits.push(`<span class="warn">${k.esc(k.t("offline"))}</span>`);
    const cam = state.camera.state;
    if (cam === "failed") bits.push(`<span class="warn">📷 ${k.esc(k.t("camera_failed"))}</span>`);
    else if (cam === "off") bits.push(`<span>📷 ${k.esc(k.t("camera_off"))}</span>`);
    else if (cam === "moving") bits.push(`<span>🎲 ${k.esc(k.t("camera_moving"))}</span>`);
    for (const note of state.notes) bits.push(`<span class="warn note">⚠ ${k.esc(note)}</span>`);
    line.innerHTML = bits.join(" ");
    line.hidden = !bits.length;
  }

  let seenKey = "";
  function render() {
    if (!state) return;
    const {block, sheet} = state;
    // New dice, a throw to check or the next player: bring the dice into view.
    const key = JSON.stringify([state.game.id, block.turn && block.turn.player,
      block.turn && block.turn.throws.length, !!state.pending]);
    if (key !== seenKey) { seenKey = key; window.scrollTo({top: 0}); }
    const kids = sheet.kids;
    const turn = block.turn;
    const n = turn ? turn.throws.length : 0;
    $("who").textContent = turn ? `${turn.player} ${k.t("turn")}` : k.t("finished");
    $("throwno").textContent = turn ? (n ? k.t("throw_of", {n}) : k.t("round", {n: turn.round})) : "";
    renderStatus();

    // The throw the camera could not trust.
    const pend = $("pending");
    if (state.pending) {
      pend.hidden = false;
      pend.innerHTML = `<strong>${k.esc(k.t("pending_title"))}</strong>
        <p>${k.pendingLines(state.pending).map(k.esc).join("<br>")}</p><p class="hint">${k.esc(k.t("pending_hint"))}</p>
        <div class="row-buttons"><button class="primary" id="accept" ${state.pending.complete ? "" : "disabled"}>${k.esc(k.t("accept"))}</button>
        <button class="secondary" id="dismiss">${k.esc(k.t("rethrow"))}</button></div>`;
      $("accept").onclick = () => send("accept", {});
      $("dismiss").onclick = () => send("dismiss", {});
    } else {
      pend.hidden = true;
    }

    // The dice: tap one to fix it.
    const dice = k.currentDice(state);
    const row = $("dice");
    if (dice) {
      row.innerHTML = dice.map((d, i) => `<button class="die-btn" data-i="${i}" aria-label="${k.esc(k.t("pick_value", {n: i + 1}))}">${k.die(d.value, d)}</button>`).join("");
      row.querySelectorAll(".die-btn").forEach((b) => { b.onclick = () => pickFace(+b.dataset.i); });
      $("dice-hint").textContent = k.t("tap_to_fix");
    } else {
      row.innerHTML = turn ? [0, 1, 2, 3, 4].map(() => `<span class="die-btn ghost">${k.die(0)}</span>`).join("") : "";
      const noCamera = ["failed", "off"].includes(state.camera.state);
      $("dice-hint").textContent = turn ? (noCamera ? "" : k.t("no_throw_hint")) : "";
    }
    const manual = $("manual");
    manual.hidden = !turn || !!state.pending || n >= 3;
    manual.textContent = n ? k.t("manual_next") : k.t("manual");
    manual.className = n ? "linkish" : "secondary wide";
    manual.onclick = manualThrow;

    renderBoxes();

    $("block-summary").textContent = k.t("show_block");
    $("block").innerHTML = k.block(block, sheet, {suggested: state.suggested});

    const undo = $("undo");
    undo.disabled = !state.undo;
    undo.innerHTML = `↶ ${k.esc(k.t("undo"))}<small>${k.esc(state.undo ? k.undoText(state.undo, kids) : k.t("nothing_undo"))}</small>`;
    undo.onclick = () => send("undo", {});

    renderConfirm();
    if (state.notice && state.notice.id !== render.lastNotice && Date.now() / 1000 - state.notice.time < 10) {
      render.lastNotice = state.notice.id;
      k.toast(k.t(state.notice.code) !== state.notice.code ? k.t(state.notice.code) : state.notice.text, "warn");
    }
  }

  function renderBoxes() {
    const {block, sheet} = state;
    const kids = sheet.kids;
    const turn = block.turn;
    const box = $("boxes");
    if (!turn) {
      box.innerHTML = `<div class="card center"><p class="winner-line">🏆 ${k.esc(k.t("winner", {names: block.winners.join(", ")}))}</p>
        <button class="primary big" id="rematch">${k.esc(k.t("rematch"))}</button></div>`;
      $("rematch").onclick = rematch;
      return;
    }
    if (!turn.throws.length || state.pending) { box.innerHTML = ""; return; }
    const several = block.columns.length > 1;
    const canScratch = turn.options.some((o) => o.can_scratch);
    const canAnnounce = block.columns.includes("announce") && turn.throws.length === 1 && !turn.announce;
    const tabs = [`<button class="tab${mode === "enter" ? " on" : ""}" data-mode="enter">${k.esc(k.t("enter_box"))}</button>`];
    if (canScratch) tabs.push(`<button class="tab${mode === "scratch" ? " on" : ""}" data-mode="scratch">${k.esc(k.t("scratch"))}</button>`);
    if (canAnnounce) tabs.push(`<button class="tab${mode === "announce" ? " on" : ""}" data-mode="announce">${k.esc(k.t("announce"))}</button>`);
    const items = [];
    const closedItems = [];
    turn.options.filter((o) => mode !== "announce" || o.column === "announce").forEach((o) => {
      let enabled, pts;
      if (mode === "scratch") { enabled = o.can_scratch || (o.legal && !o.fits); pts = "0"; }
      else if (mode === "announce") { enabled = true; pts = ""; }
      else { enabled = o.legal; pts = o.legal ? String(o.points + (o.extra_bonus || 0)) : "–"; }
      const best = mode === "enter" && state.suggested && state.suggested.box === o.box && state.suggested.column === o.column;
      const sel = selected && selected.box === o.box && selected.column === o.column;
      const name = k.esc(k.label(o.box, kids)) + (several ? ` <small>${k.esc(k.label(o.column))}</small>` : "");
      if (!enabled) {
        const why = mode === "scratch" ? "" : k.reason(o.reason, kids, true);
        closedItems.push(`<li class="closed-box" data-box="${o.box}" title="${k.esc(k.reason(o.reason, kids))}"><span>${name}</span><span class="reason">${k.esc(why)}</span></li>`);
        return;
      }
      items.push(`<button class="box-btn${best ? " best" : ""}${sel ? " selected" : ""}"
        data-box="${o.box}" data-column="${o.column}"><span class="bname">${best ? "★ " : ""}${name}</span><span class="bpts">${pts}</span></button>`);
    });
    const closedList = closedItems.length ? `<ul class="closed-list">${closedItems.join("")}</ul>` : "";
    box.innerHTML = (tabs.length > 1 ? `<div class="tabs">${tabs.join("")}</div>` : "") +
      `<div class="box-list">${items.join("")}</div>${closedList}`;
    box.querySelectorAll(".tab").forEach((b) => { b.onclick = () => { mode = b.dataset.mode; selected = null; render(); }; });
    box.querySelectorAll(".box-btn:not([disabled])").forEach((b) => {
      b.onclick = () => {
        const choice = {box: b.dataset.box, column: b.dataset.column, scratch: mode === "scratch"};
        if (mode === "announce") { send("announce", {box: choice.box}); return; }
        if (selected && selected.box === choice.box && selected.column === choice.column) { confirmEntry(); return; }
        selected = choice;
        render();
      };
    });
  }

  function renderConfirm() {
    const bar = $("confirm");
    if (!selected || !state.block.turn) { bar.hidden = true; return; }
    const o = state.block.turn.options.find((x) => x.box === selected.box && x.column === selected.column);
    if (!o) { selected = null; bar.hidden = true; return; }
    const pts = selected.scratch ? 0 : o.points + (o.extra_bonus || 0);
    $("confirm-yes").textContent = `✓ ${k.t("enter_for", {box: k.label(o.box, state.sheet.kids), player: state.block.turn.player})} · ${pts}`;
    $("confirm-no").textContent = k.t("cancel");
    $("confirm-yes").onclick = confirmEntry;
    $("confirm-no").onclick = () => { selected = null; render(); };
    bar.hidden = false;
  }

  function confirmEntry() {
    if (!selected) return;
    const body = {box: selected.box, column: selected.column};
    if (selected.scratch) body.scratch = true;
    send("entries", body);
  }

  async function rematch() {
    const r = await k.api("POST", `/api/games/${state.game.id}/rematch`, {});
    if (r.ok) { state = r.data; render(); } else k.toast(k.errorText(r.error), "error");
  }

  /* ---- sheets (bottom dialogs) ---------------------------------------------------- */

  const sheet = $("sheet");
  function openSheet(html, bind) {
    $("sheet-body").innerHTML = html;
    if (!sheet.open) sheet.showModal();
    bind && bind($("sheet-body"));
  }
  function closeSheet() {
    const img = sheet.querySelector("img.camera");
    if (img) img.src = "";
    if (sheet.open) sheet.close();
  }
  sheet.addEventListener("click", (e) => { if (e.target === sheet) closeSheet(); });
  sheet.addEventListener("close", () => { const img = sheet.querySelector("img.camera"); if (img) img.src = ""; });

  function facePad(faces, kids, cls) {
    return `<div class="face-pad ${cls || ""}">${faces.map((f) => `<button class="face-btn" data-v="${k.esc(f)}" aria-label="${k.esc(k.faceName(f, kids))}">${k.die(f)}</button>`).join("")}</div>`;
  }
  const faceValue = (s) => (/^\d+$/.test(s) ? +s : s);

  function pickFace(i) {
    const faces = state.sheet.faces;
    openSheet(`<h3>${k.esc(k.t("pick_value", {n: i + 1}))}</h3>${facePad(faces, state.sheet.kids)}
      <button class="secondary wide" data-close>${k.esc(k.t("cancel"))}</button>`, (body) => {
      body.querySelectorAll(".face-btn").forEach((b) => {
        b.onclick = async () => { closeSheet(); await send("corrections", {index: i, value: faceValue(b.dataset.v)}); };
      });
      body.querySelector("[data-close]").onclick = closeSheet;
    });
  }

  function manualThrow() {
    const turn = state.block.turn;
    const prev = turn.throws.length ? turn.throws[turn.throws.length - 1].dice : null;
    const dice = prev ? [...prev] : [null, null, null, null, null];
    const held = new Set();
    let active = 0;
    const kids = state.sheet.kids;
    const draw = (body) => {
      body.querySelector(".manual-dice").innerHTML = dice.map((v, i) => `<div class="mdie">
        <button class="die-btn${i === active ? " active" : ""}" data-i="${i}" ${held.has(i) ? "disabled" : ""}>${k.die(v, {held: held.has(i)})}</button>
        ${prev ? `<button class="hold${held.has(i) ? " on" : ""}" data-h="${i}">${k.esc(held.has(i) ? k.t("held") : k.t("hold"))}</button>` : ""}</div>`).join("");
      body.querySelectorAll(".manual-dice .die-btn").forEach((b) => { b.onclick = () => { active = +b.dataset.i; draw(body); }; });
      body.querySelectorAll(".hold").forEach((b) => {
        b.onclick = () => {
          const i = +b.dataset.h;
          if (held.has(i)) held.delete(i); else { held.add(i); dice[i] = prev[i]; }
          if (held.has(active)) active = [0, 1, 2, 3, 4].find((j) => !held.has(j)) ?? active;
          draw(body);
        };
      });
      body.querySelector("#save-throw").disabled = dice.some((v) => v === null) || held.size === 5;
    };
    openSheet(`<h3>${k.esc(turn.throws.length ? k.t("manual_next") : k.t("manual"))} · ${k.esc(turn.player)}</h3>
      <div class="manual-dice"></div>${facePad(state.sheet.faces, kids, "compact")}
      <div class="row-buttons"><button class="primary" id="save-throw">${k.esc(k.t("save_throw"))}</button>
      <button class="secondary" data-close>${k.esc(k.t("cancel"))}</button></div>`, (body) => {
      body.querySelectorAll(".face-btn").forEach((b) => {
        b.onclick = () => {
          dice[active] = faceValue(b.dataset.v);
          for (let step = 1; step <= 5; step++) {
            const next = (active + step) % 5;
            if (!held.has(next)) { active = next; break; }
          }
          draw(body);
        };
      });
      body.querySelector("[data-close]").onclick = closeSheet;
      body.querySelector("#save-throw").onclick = async () => {
        closeSheet();
        const payload = {dice};
        if (prev) payload.held = [...held].sort();
        await send("throws", payload);
      };
      draw(body);
    });
  }

  function menu() {
    const finished = !state.block.turn;
    openSheet(`<h3>${k.esc(k.t("menu"))}</h3><div class="menu">
      <button class="secondary wide" id="m-new">＋ ${k.esc(k.t("new_game"))}</button>
      <button class="secondary wide" id="m-rematch">⟳ ${k.esc(k.t("rematch"))}</button>
      <button class="secondary wide" id="m-players">👥 ${k.esc(k.t("players"))}</button>
      <button class="secondary wide" id="m-camera">📷 ${k.esc(k.t("camera"))}</button>
      <a class="secondary wide button" href="/history">📜 ${k.esc(k.t("history"))}</a>
      <a class="secondary wide button" href="/">🖥 ${k.esc(k.t("block"))}</a>
      <label class="field">${k.esc(k.t("phone_name"))}<input id="m-name" maxlength="24" value="${k.esc(me ? me.name : "")}"></label>
      <button class="secondary wide" data-close>${k.esc(k.t("cancel"))}</button></div>`, (body) => {
      body.querySelector("#m-new").onclick = newGame;
      body.querySelector("#m-rematch").onclick = () => { closeSheet(); rematch(); };
      body.querySelector("#m-rematch").classList.toggle("primary", finished);
      body.querySelector("#m-players").onclick = playersSheet;
      body.querySelector("#m-camera").onclick = cameraSheet;
      body.querySelector("[data-close]").onclick = closeSheet;
      body.querySelector("#m-name").onchange = async (e) => {
        const r = await k.api("POST", "/api/session/name", {name: e.target.value});
        if (r.ok) { me = r.data.phone; localStorage.setItem("kniffel-phone-name", me.name); k.toast(k.t("joined_as", {name: me.name})); }
        else k.toast(k.errorText(r.error), "error");
      };
    });
  }

  function playerInputs(names, allowOrder) {
    return names.map((n, i) => `<div class="player-row" data-i="${i}">
      <input class="pname-input" value="${k.esc(n)}" maxlength="24" aria-label="${k.esc(k.t("players"))} ${i + 1}">
      ${allowOrder ? `<button class="chip" data-up="${i}" ${i === 0 ? "disabled" : ""} aria-label="up">↑</button>
      <button class="chip" data-down="${i}" ${i === names.length - 1 ? "disabled" : ""} aria-label="down">↓</button>` : ""}
      ${allowOrder === "remove" ? `<button class="chip" data-del="${i}" ${names.length <= 1 ? "disabled" : ""} aria-label="remove">✕</button>` : ""}</div>`).join("");
  }

  function newGame() {
    const setup = state.game.setup;
    let names = [...state.block.players.map((p) => p.name)];
    const rules = k.rules;
    const draw = (body) => {
      body.querySelector(".players").innerHTML = playerInputs(names, "remove");
      body.querySelectorAll(".pname-input").forEach((inp, i) => { inp.oninput = () => { names[i] = inp.value; }; });
      body.querySelectorAll("[data-up]").forEach((b) => { b.onclick = () => { const i = +b.dataset.up; [names[i - 1], names[i]] = [names[i], names[i - 1]]; draw(body); }; });
      body.querySelectorAll("[data-down]").forEach((b) => { b.onclick = () => { const i = +b.dataset.down; [names[i + 1], names[i]] = [names[i], names[i + 1]]; draw(body); }; });
      body.querySelectorAll("[data-del]").forEach((b) => { b.onclick = () => { names.splice(+b.dataset.del, 1); draw(body); }; });
      const rs = body.querySelector("#g-rules").value;
      const takes = rules.rulesets.find((r) => r.id === rs).variants;
      body.querySelector(".variant-box").hidden = !takes;
    };
    const opts = rules.rulesets.map((r) => `<option value="${r.id}" ${r.id === setup.rules ? "selected" : ""}>${k.esc(r.title)}</option>`).join("");
    const variants = rules.variants.map((v) => `<label class="check"><input type="checkbox" name="variant" value="${v}" ${setup.variants.includes(v) ? "checked" : ""}> ${k.esc(v)}</label>`).join("");
    const columns = rules.columns.map((c) => `<label class="check"><input type="checkbox" name="column" value="${c}" ${setup.columns.includes(c) ? "checked" : ""}> ${k.esc(k.label(c))}</label>`).join("");
    openSheet(`<h3>${k.esc(k.t("new_game"))}</h3>
      <h4>${k.esc(k.t("players"))}</h4><div class="players"></div>
      <button class="secondary" id="g-add">${k.esc(k.t("add_player"))}</button>
      <label class="field">${k.esc(k.t("rules"))}<select id="g-rules">${opts}</select></label>
      <div class="variant-box"><h4>${k.esc(k.t("variants"))}</h4><div class="checks">${variants}</div>
      <h4>${k.esc(k.t("columns"))}</h4><div class="checks">${columns}</div></div>
      <div class="row-buttons"><button class="primary" id="g-start">${k.esc(k.t("start"))}</button>
      <button class="secondary" data-close>${k.esc(k.t("cancel"))}</button></div>`, (body) => {
      body.querySelector("#g-add").onclick = () => { if (names.length < 8) { names.push(`${k.lang === "de" ? "Spieler" : "Player"} ${names.length + 1}`); draw(body); } };
      body.querySelector("#g-rules").onchange = () => draw(body);
      body.querySelector("[data-close]").onclick = closeSheet;
      body.querySelector("#g-start").onclick = async () => {
        const rs = body.querySelector("#g-rules").value;
        const takes = rules.rulesets.find((r) => r.id === rs).variants;
        const payload = {players: names.map((n) => n.trim()), rules: rs};
        if (takes) {
          payload.variants = [...body.querySelectorAll("input[name=variant]:checked")].map((x) => x.value);
          const cols = [...body.querySelectorAll("input[name=column]:checked")].map((x) => x.value);
          payload.columns = cols.length ? cols : ["free"];
        }
        const r = await k.api("POST", "/api/games", payload);
        if (r.ok) { closeSheet(); state = r.data; render(); }
        else k.toast(k.errorText(r.error), "error");
      };
      draw(body);
    });
  }

  function playersSheet() {
    const current = state.block.players.map((p) => p.name);
    const names = [...current];
    const order = current.map((_, i) => i);
    const canOrder = !state.undo;
    const draw = (body) => {
      body.querySelector(".players").innerHTML = playerInputs(names, canOrder);
      body.querySelectorAll(".pname-input").forEach((inp, i) => { inp.oninput = () => { names[i] = inp.value; }; });
      const swap = (a, b) => { [names[a], names[b]] = [names[b], names[a]]; [order[a], order[b]] = [order[b], order[a]]; draw(body); };
      body.querySelectorAll("[data-up]").forEach((b) => { b.onclick = () => swap(+b.dataset.up - 1, +b.dataset.up); });
      body.querySelectorAll("[data-down]").forEach((b) => { b.onclick = () => swap(+b.dataset.down, +b.dataset.down + 1); });
    };
    openSheet(`<h3>${k.esc(k.t("players"))}</h3><div class="players"></div>
      ${canOrder ? "" : `<p class="hint">${k.esc(k.t("player_order_locked"))}</p>`}
      <div class="row-buttons"><button class="primary" id="p-save">${k.esc(k.t("save"))}</button>
      <button class="secondary" data-close>${k.esc(k.t("cancel"))}</button></div>`, (body) => {
      body.querySelector("[data-close]").onclick = closeSheet;
      body.querySelector("#p-save").onclick = async () => {
        closeSheet();
        await send("players", {players: names.map((n) => n.trim()), order});
      };
      draw(body);
    });
  }

  function cameraSheet() {
    openSheet(`<h3>${k.esc(k.t("camera"))}</h3>
      <p class="hint">${k.esc(state.camera.message)}</p>
      <img class="camera" alt="${k.esc(k.t("camera"))}" src="/api/camera.mjpeg?t=${Date.now()}">
      <button class="secondary wide" data-close>${k.esc(k.t("cancel"))}</button>`, (body) => {
      body.querySelector("[data-close]").onclick = closeSheet;
      body.querySelector("img").onerror = (e) => { e.target.replaceWith(Object.assign(document.createElement("p"), {className: "hint", textContent: k.t("camera_off")})); };
    });
  }

  /* ---- start ---------------------------------------------------------------------- */

  async function start() {
    k.langButton($("lang"), () => { render(); if (!$("join-screen").hidden) showJoin(); });
    $("menu-button").onclick = menu;
    $("menu-button").title = k.t("menu");
    await k.loadRules();
    const token = new URLSearchParams(location.hash.slice(1)).get("t");
    if (token) {
      history.replaceState(null, "", location.pathname);  // the secret does not stay in the URL bar
      const name = localStorage.getItem("kniffel-phone-name");
      if (await joinWith(name ? {token, name} : {token})) { enterGame(); return; }
      return;
    }
    const r = await k.api("GET", "/api/session");
    if (r.ok && r.data.joined) { me = r.data.phone; enterGame(); } else showJoin();
  }
  start();
})();
