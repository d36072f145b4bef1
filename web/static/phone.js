/* The phone: join with the PIN or the QR code, fix a die (tap it, pick the value), choose a
   box (tap, confirm), undo, start a new game, rename players, see the camera, calibrate the
   table (areas, exposure, focus, a check, teaching a dice set). Everything goes through the
   JSON API with the version the phone last saw, so two phones never overwrite each other
   silently. */
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
    k.live((s) => { state = k.newer(state, s); render(); }, (ok) => { connected = ok; renderStatus(); });
  }

  async function send(kind, body) {
    if (busy || !state) return null;
    busy = true;
    document.body.classList.add("busy");
    const r = await k.api("POST", `/api/games/${state.game.id}/${kind}`, {version: state.game.version, ...body});
    busy = false;
    document.body.classList.remove("busy");
    if (r.ok) {
      state = k.newer(state, r.data);
      selected = null;
      mode = "enter";
      render();
      return r.data;
    }
    if (r.status === 409 && r.data && r.data.state) {
      state = k.newer(state, r.data.state);
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
    else if (cam === "paused") bits.push(`<span>🎯 ${k.esc(k.t("camera_paused"))}</span>`);
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
        <button class="secondary" id="dismiss">${k.esc(k.t("rethrow"))}</button></div>
        ${state.pending.teach_here ? `<button class="secondary wide" id="teach-here">🎲 ${k.esc(k.t("teach_here"))}</button>` : ""}`;
      $("accept").onclick = () => send("accept", {});
      $("dismiss").onclick = () => send("dismiss", {});
      if (state.pending.teach_here) $("teach-here").onclick = teachHere;
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
    const r = await k.api("POST", `/api/games/${state.game.id}/rematch`, {replaces: state.game.id});
    if (r.ok) { state = k.newer(state, r.data); render(); } else if (!tookFresher(r)) k.toast(k.errorText(r.error), "error");
  }

  /** Another phone started a game first (409 with the fresh state): show that one. */
  function tookFresher(r) {
    if (r.status !== 409 || !r.data || !r.data.state) return false;
    if (sheet.open) closeSheet();
    state = k.newer(state, r.data.state);
    render();
    k.toast(k.t("conflict"), "warn");
    return true;
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
  sheet.addEventListener("close", () => {
    const img = sheet.querySelector("img.camera");
    if (img) img.src = "";
    if (calibrating) { calibrating = false; k.api("POST", "/api/calibration/end", {}); }
  });

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
      <button class="secondary wide" id="m-calibrate">🎯 ${k.esc(k.t("calibrate"))}</button>
      <a class="secondary wide button" href="/history">📜 ${k.esc(k.t("history"))}</a>
      <a class="secondary wide button" href="/">🖥 ${k.esc(k.t("block"))}</a>
      <label class="field">${k.esc(k.t("phone_name"))}<input id="m-name" maxlength="24" value="${k.esc(me ? me.name : "")}"></label>
      <button class="secondary wide" data-close>${k.esc(k.t("cancel"))}</button></div>`, (body) => {
      body.querySelector("#m-new").onclick = newGame;
      body.querySelector("#m-rematch").onclick = () => { closeSheet(); rematch(); };
      body.querySelector("#m-rematch").classList.toggle("primary", finished);
      body.querySelector("#m-players").onclick = playersSheet;
      body.querySelector("#m-camera").onclick = cameraSheet;
      body.querySelector("#m-calibrate").onclick = calibrateSheet;
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
        const payload = {players: names.map((n) => n.trim()), rules: rs, replaces: state.game.id};
        if (takes) {
          payload.variants = [...body.querySelectorAll("input[name=variant]:checked")].map((x) => x.value);
          const cols = [...body.querySelectorAll("input[name=column]:checked")].map((x) => x.value);
          payload.columns = cols.length ? cols : ["free"];
        }
        const r = await k.api("POST", "/api/games", payload);
        if (r.ok) { closeSheet(); state = k.newer(state, r.data); render(); }
        else if (!tookFresher(r)) k.toast(k.errorText(r.error), "error");
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

  /* ---- calibrate: the table's camera, set up from this phone ------------------------ */

  let calib = null;         // GET /api/calibration
  let calibrating = false;  // the table reads no throws until the sheet closes

  /* A calibration request from a button: busy while it runs; a refusal is a toast. */
  async function calibStep(button, method, path, body) {
    const label = button.innerHTML;
    button.disabled = true;
    button.innerHTML = "…";
    const r = await k.api(method, path, body);
    button.disabled = false;
    button.innerHTML = label;
    if (r.ok) return r.data;
    if (r.status === 401) { closeSheet(); showJoin(k.t("not_joined")); }
    else k.toast(k.errorText(r.error), "error");
    return null;
  }

  /* A step that changes the calibration: the overview again, unless the phone has moved on
     meanwhile (focusing takes seconds). `done`: the message once saved, or a function of
     the reply giving [message, kind]. */
  async function calibSave(button, path, body, done) {
    const data = await calibStep(button, "POST", path, body);
    if (!data) return;
    calib = data;
    const [message, kind] = typeof done === "function" ? done(data) : [done || k.t("calib_saved")];
    k.toast(message, kind);
    if (button.isConnected) calibrateMain();
  }

  async function calibrateSheet() {
    const r = await k.api("POST", "/api/calibration/begin", {});
    if (r.status === 401) { closeSheet(); showJoin(k.t("not_joined")); return; }
    calib = r.ok ? r.data : null;
    calibrating = r.ok;
    calibrateMain();
  }

  function calibrateMain() {
    const c = calib;
    const t = (key, params) => k.esc(k.t(key, params));
    if (!c || !c.camera.available || ["failed", "off"].includes(c.camera.state)) {
      openSheet(`<h3>🎯 ${t("calibrate")}</h3><p>${t("calib_no_camera")}</p>
        <p class="hint">${k.esc(c ? c.camera.message : state.camera.message)}</p>
        <button class="secondary wide" data-close>${t("back")}</button>`, (body) => {
        body.querySelector("[data-close]").onclick = closeSheet;
      });
      return;
    }
    const corners = (area, empty) => (area.length ? t("calib_corners", {n: area.length}) : t(empty));
    const controls = c.camera.controls ? `
      <button class="secondary wide" id="c-lock">${c.exposure ? "🔓 " + t("calib_unlock") : "🔒 " + t("calib_lock")}</button>
      <button class="secondary wide" id="c-focus">◎ ${t("calib_focus_now")}</button>` :
      `<p class="hint" id="c-no-controls">${t("calib_no_controls", {kind: c.camera.kind})}</p>`;
    // Learning at tables (web.learn) is a taught set's: the built-in readers learn nothing.
    const taught = c.dice_set in (c.taught_sets || {});
    const learnt = taught && (c.learnt || {})[c.dice_set];
    openSheet(`<h3>🎯 ${t("calibrate")}</h3>
      <p class="hint">${t("calib_paused")}</p>
      <dl class="calib-summary">
        <dt>${t("calib_throw_area")}</dt><dd id="c-throw">${corners(c.throw_area, "calib_whole")}</dd>
        <dt>${t("calib_keep_area")}</dt><dd id="c-keep">${corners(c.keep_area, "calib_none")}</dd>
        <dt>${t("calib_exposure")}</dt><dd id="c-exposure">${t(c.exposure ? "calib_locked" : "calib_auto")}</dd>
        <dt>${t("calib_focus")}</dt><dd>${c.lens_position === null ? t("calib_auto") : k.esc(c.lens_position) + " dpt"}</dd>
        <dt>${t("calib_turn")}</dt><dd id="c-turn">${t("calib_turn_value", {deg: c.turn})}</dd>
        <dt>${t("calib_dice_set")}</dt><dd id="c-dice-set">${k.esc(c.dice_set)}</dd>
        ${taught ? `<dt>${t("calib_learn")}</dt><dd id="c-learn">${t(c.learn ? "calib_yes" : "calib_no")}</dd>` : ""}
      </dl>
      <div class="menu">
        <button class="secondary wide" id="c-areas">▭ ${t("calib_areas")}</button>
        ${controls}
        <button class="secondary wide" id="c-turn-now">↻ ${t("calib_turn_now")}</button>
        <p class="hint">${t("calib_turn_hint")}</p>
        <button class="secondary wide" id="c-check">✓ ${t("calib_check")}</button>
        <p class="hint">${t("calib_check_hint")}</p>
        <div id="c-check-result" class="calib-result" hidden></div>
        <button class="secondary wide" id="c-teach">🎲 ${t("calib_teach")}</button>
        ${taught ? `<button class="secondary wide" id="c-learn-now">${t(c.learn ? "calib_learn_off" : "calib_learn_on")}</button>
        <p class="hint">${t("calib_learn_hint")}</p>` : ""}
        ${learnt ? `<button class="secondary wide" id="c-forget">↺ ${t("calib_forget", {name: c.dice_set, n: learnt})}</button>` : ""}
        <button class="primary wide" data-close>${t("calib_done")}</button>
      </div>`, (body) => {
      body.querySelector("[data-close]").onclick = closeSheet;
      body.querySelector("#c-areas").onclick = calibrateAreas;
      body.querySelector("#c-teach").onclick = teachName;
      if (taught) {
        body.querySelector("#c-learn-now").onclick = (e) => calibSave(e.currentTarget, "/api/calibration/learn", {learn: !c.learn});
      }
      if (learnt) {
        // Forgetting cannot be undone (the dice are gone): a second tap makes sure.
        body.querySelector("#c-forget").onclick = (e) => {
          const button = e.currentTarget;
          if (!button.dataset.sure) {
            button.dataset.sure = "1";
            button.textContent = k.t("calib_forget_sure");
            return;
          }
          calibSave(button, "/api/calibration/forget-learnt", {name: c.dice_set}, k.t("calib_forgot", {name: c.dice_set}));
        };
      }
      body.querySelector("#c-turn-now").onclick = (e) => calibSave(e.currentTarget, "/api/calibration/turn", {turn: (c.turn + 90) % 360});
      if (c.camera.controls) {
        body.querySelector("#c-lock").onclick = (e) => calibSave(e.currentTarget, "/api/calibration/exposure", {locked: !c.exposure});
        body.querySelector("#c-focus").onclick = (e) => calibSave(e.currentTarget, "/api/calibration/focus", {});
      }
      body.querySelector("#c-check").onclick = async (e) => {
        const data = await calibStep(e.currentTarget, "POST", "/api/calibration/check", {});
        if (!data) return;
        const out = body.querySelector("#c-check-result");
        out.hidden = false;
        out.className = "calib-result " + (data.ok ? "good" : "bad");
        out.innerHTML = `<p><strong>${data.ok ? "✓ " + t("check_ok") : "✗ " + t("check_bad")}</strong><br>${k.esc(data.message)}</p>
          <div class="dice-row">${data.values.map((v) => k.die(v)).join("")}</div>
          <img class="calib-shot" alt="" src="${data.picture}">`;
      };
    });
  }

  /* Tap the corners of the throw area and the keep area on a still of the camera. */
  function calibrateAreas() {
    const [width, height] = calib.size;
    const points = {throw: calib.throw_area.map((p) => [...p]), keep: calib.keep_area.map((p) => [...p])};
    let which = "throw";
    const t = (key, params) => k.esc(k.t(key, params));
    const snapshot = () => `/api/calibration/snapshot.jpg?t=${Date.now()}`;
    const shape = (area, cls) => {
      const pts = points[area];
      const line = pts.map((p) => p.join(",")).join(" ");
      const r = Math.max(width, height) / 90;
      return (pts.length >= 3 ? `<polygon class="${cls}" points="${line}"/>` : pts.length === 2 ? `<polyline class="${cls}" points="${line}"/>` : "") +
        pts.map((p) => `<circle class="${cls}" cx="${p[0]}" cy="${p[1]}" r="${r}"/>`).join("");
    };
    const draw = (body) => {
      body.querySelector("svg").innerHTML = shape("keep", "keep" + (which === "keep" ? " on" : "")) +
        shape("throw", "throw" + (which === "throw" ? " on" : ""));
      body.querySelectorAll(".tab").forEach((b) => b.classList.toggle("on", b.dataset.which === which));
      body.querySelector("#a-hint").textContent = `${k.t(which === "throw" ? "area_throw" : "area_keep")} ${k.t("area_set", {n: points[which].length})}`;
      const keep = points.keep.length;
      body.querySelector("#a-save").disabled = points.throw.length < 3 || (keep > 0 && keep < 3);
    };
    openSheet(`<h3>▭ ${t("calib_areas")}</h3>
      <div class="tabs"><button class="tab" data-which="throw">${t("calib_throw_area")}</button>
        <button class="tab" data-which="keep">${t("calib_keep_area")}</button></div>
      <p class="hint" id="a-hint"></p>
      <div class="calib-picture" id="a-picture"><img class="calib-shot" id="a-img" alt="${t("camera")}" src="${snapshot()}">
        <svg viewBox="0 0 ${width} ${height}" preserveAspectRatio="none" aria-hidden="true"></svg></div>
      <div class="row-buttons"><button class="secondary" id="a-reset">↺ ${t("area_reset")}</button>
        <button class="secondary" id="a-reload">📷 ${t("area_reload")}</button></div>
      <div class="row-buttons"><button class="primary" id="a-save">${t("save")}</button>
        <button class="secondary" id="a-back">${t("back")}</button></div>`, (body) => {
      const img = body.querySelector("#a-img");
      img.onerror = () => { img.alt = k.t("no_camera"); k.toast(k.t("no_camera"), "error"); };
      body.querySelector("#a-picture").onclick = (e) => {
        const box = img.getBoundingClientRect();
        const x = Math.round(Math.min(1, Math.max(0, (e.clientX - box.left) / box.width)) * width);
        const y = Math.round(Math.min(1, Math.max(0, (e.clientY - box.top) / box.height)) * height);
        points[which].push([x, y]);
        draw(body);
      };
      body.querySelectorAll(".tab").forEach((b) => { b.onclick = () => { which = b.dataset.which; draw(body); }; });
      body.querySelector("#a-reset").onclick = () => { points[which] = []; draw(body); };
      body.querySelector("#a-reload").onclick = () => { img.src = snapshot(); };
      body.querySelector("#a-back").onclick = calibrateMain;
      body.querySelector("#a-save").onclick = (e) => calibSave(e.currentTarget, "/api/calibration/areas",
        {throw_area: points.throw, keep_area: points.keep});
      draw(body);
    });
  }

  /* The taught set recognised none of a throw's dice (other light or camera): teach it
     here too, straight into adding to the set the table reads. */
  async function teachHere() {
    await calibrateSheet();
    if (!calib || !calib.camera.available || !(calib.dice_set in (calib.taught_sets || {}))) return;
    localStorage.setItem("kniffel-dice-set", calib.dice_set);
    teachName();
  }

  /* Teaching a dice set: a name and pips or animals, then one picture per face. A name
     taught before offers to add these pictures to what the set knows (the same dice in
     this light) or to start it again. */
  function teachName() {
    const t = (key, params) => k.esc(k.t(key, params));
    const taught = (calib && calib.taught_sets) || {};
    let kind = "pips";
    let add = true;
    openSheet(`<h3>🎲 ${t("calib_teach")}</h3><p class="hint">${t("teach_intro")}</p>
      <label class="field">${t("teach_name")}<input id="t-name" maxlength="40" autocapitalize="off" autocomplete="off"
        value="${k.esc(localStorage.getItem("kniffel-dice-set") || "")}"></label>
      <div class="tabs" id="t-kind"><button class="tab on" data-kind="pips">${t("teach_pips")}</button>
        <button class="tab" data-kind="animals">${t("teach_animals")}</button></div>
      <div id="t-known" hidden><p class="hint" id="t-known-say"></p>
        <div class="tabs"><button class="tab on" data-add="1">${t("teach_add")}</button>
          <button class="tab" data-add="">${t("teach_replace")}</button></div></div>
      <div class="row-buttons"><button class="primary" id="t-start">${t("teach_start")}</button>
        <button class="secondary" id="t-back">${t("back")}</button></div>`, (body) => {
      const input = body.querySelector("#t-name");
      const known = () => taught[input.value.trim()];
      const show = () => {
        const faces = known();
        body.querySelector("#t-known").hidden = !faces;
        body.querySelector("#t-kind").hidden = !!(faces && add);
        if (faces) {
          body.querySelector("#t-known-say").textContent = k.t("teach_known", {n: faces.length});
        }
      };
      body.querySelectorAll("#t-kind .tab").forEach((b) => {
        b.onclick = () => { kind = b.dataset.kind; body.querySelectorAll("#t-kind .tab").forEach((x) => x.classList.toggle("on", x === b)); };
      });
      body.querySelectorAll("#t-known .tab").forEach((b) => {
        b.onclick = () => {
          add = !!b.dataset.add;
          body.querySelectorAll("#t-known .tab").forEach((x) => x.classList.toggle("on", x === b));
          show();
        };
      });
      input.oninput = show;
      show();
      body.querySelector("#t-back").onclick = calibrateMain;
      body.querySelector("#t-start").onclick = () => {
        const name = input.value.trim();
        if (!name) { k.toast(k.t("teach_need_name"), "warn"); return; }
        localStorage.setItem("kniffel-dice-set", name);
        const faces = known();
        const adding = !!(faces && add);
        // Adding teaches every face of the set's kind: the set's own and any it lacks.
        const own = adding ? (typeof faces[0] === "string" ? "animals" : "pips") : kind;
        teachFace(name, calib.faces[own], 0, new Set(), adding);
      };
    });
  }

  function teachFace(name, faces, i, captured, add) {
    const t = (key, params) => k.esc(k.t(key, params));
    const face = faces[i];
    const last = i === faces.length - 1;
    const faceName = k.faceName(face, typeof face === "string");
    openSheet(`<h3>🎲 ${k.esc(name)} · ${t("teach_face_of", {n: i + 1, of: faces.length})}</h3>
      <div class="teach-face">${k.die(face)}</div>
      <p class="teach-say">${t("teach_lay", {face: faceName})}</p>
      <div id="t-result" class="calib-result" hidden></div>
      <button class="primary big" id="t-capture">📷 ${t(captured.has(face) ? "teach_again" : "teach_capture")}</button>
      <div class="row-buttons">
        <button class="secondary" id="t-prev">← ${t("back")}</button>
        <button class="${last ? "primary" : "secondary"}" id="t-next" ${captured.has(face) ? "" : "disabled"}>${t(last ? "teach_finish" : "teach_next")} →</button>
      </div>`, (body) => {
      body.querySelector("#t-prev").onclick = () => (i ? teachFace(name, faces, i - 1, captured, add) : teachName());
      body.querySelector("#t-capture").onclick = async (e) => {
        const button = e.currentTarget;
        const data = await calibStep(button, "POST", "/api/calibration/teach/capture", {name, face});
        if (!data) return;
        captured.add(face);
        const out = body.querySelector("#t-result");
        out.hidden = false;
        out.className = "calib-result " + (data.dice ? "good" : "bad");
        out.innerHTML = `<p>${t(!data.dice ? "teach_none_seen" : data.dice === 1 ? "teach_seen_one" : "teach_seen", {n: data.dice})}</p>
          <img class="calib-shot" alt="" src="${data.picture}">`;
        button.textContent = `📷 ${k.t("teach_again")}`;
        button.className = "secondary big";
        const next = body.querySelector("#t-next");
        next.disabled = false;
        next.className = "primary";
      };
      body.querySelector("#t-next").onclick = (e) => {
        if (!last) { teachFace(name, faces, i + 1, captured, add); return; }
        calibSave(e.currentTarget, "/api/calibration/teach", {name, faces, add}, (data) => {
          const doubts = (data.taught && data.taught.warnings) || [];
          return doubts.length ? [k.t("teach_done_doubt", {name, why: doubts.join(" ")}), "warn"]
            : [k.t(add ? "teach_added" : "teach_done", {name})];
        });
      };
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
