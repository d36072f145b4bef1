/* The table's screen (TV or tablet): the block, whose turn, the dice, what each box would
   score, and how to join. Read-only: it never changes anything. */
"use strict";

(() => {
  let state = null;
  let join = null;
  let lastNotice = 0;
  const $ = (id) => document.getElementById(id);

  function cameraText(cam) {
    if (cam.state === "ok") return ["ok", k.t("camera_ok")];
    if (cam.state === "moving") return ["moving", k.t("camera_moving")];
    if (cam.state === "paused") return ["moving", k.t("camera_paused")];
    if (cam.state === "failed") return ["failed", k.t("camera_failed")];
    return ["off", k.t("camera_off")];
  }
  const k = K;

  function render() {
    if (!state) return;
    const {block, sheet} = state;
    const kids = sheet.kids;
    document.title = `Kniffel – ${block.turn ? block.turn.player : k.t("finished")}`;
    $("history-link").textContent = k.t("history");
    const extras = [...block.variants, ...(block.columns.length > 1 ? block.columns.map((c) => k.label(c)) : [])];
    $("rules").textContent = sheet.title + (extras.length ? " · " + extras.join(", ") : "") +
      (block.turn ? " · " + k.t("round", {n: block.turn.round}) : "");
    const [cls, text] = cameraText(state.camera);
    const cam = $("camera");
    cam.className = "camera-status " + cls;
    cam.textContent = text;
    cam.title = state.camera.message;
    // Why a part of the table is off (a broken config.toml, no dice reader, a failed camera):
    // said openly, not in a tooltip, so the family knows what to fix.
    const reasons = [...(state.camera.state === "failed" ? [state.camera.message] : []), ...state.notes];
    const notes = $("notes");
    notes.hidden = !reasons.length;
    notes.innerHTML = reasons.map((r) => `<p class="warn">⚠ ${k.esc(r)}</p>`).join("");

    $("block").innerHTML = k.block(block, sheet, {suggested: state.suggested});

    // Whose turn, which throw, the dice.
    const turn = block.turn;
    let html = "";
    if (!turn) {
      html = `<div class="player-name">${k.esc(k.t("finished"))}</div>
        <div class="winner-line">🏆 ${k.esc(k.t("winner", {names: block.winners.join(", ")}))}</div>`;
    } else {
      const n = turn.throws.length;
      html = `<div class="player-name">${k.esc(turn.player)} <small>${k.esc(k.t("turn"))}</small></div>
        <div class="throw-no">${n ? k.esc(k.t("throw_of", {n})) : k.esc(k.t("no_throw"))}
        ${[1, 2, 3].map((i) => `<span class="dot${i <= n ? " on" : ""}"></span>`).join("")}</div>`;
      const dice = k.currentDice(state);
      if (dice) {
        html += `<div class="dice-row big">${dice.map((d) => k.die(d.value, d)).join("")}</div>`;
      } else {
        const noCamera = ["failed", "off"].includes(state.camera.state);
        html += `<p class="hint">${k.esc(k.t(noCamera ? "camera_off" : "no_throw_hint"))}</p>`;
      }
      if (turn.announce) html += `<p class="announce-line">${k.esc(k.t("announced", {box: k.label(turn.announce, kids)}))}</p>`;
      if (state.pending) {
        html += `<div class="pending-box"><strong>${k.esc(k.t("pending_title"))}:</strong> ${k.pendingLines(state.pending).map(k.esc).join("; ")}
          <br>${k.esc(k.t("pending_hint"))}</div>`;
      }
    }
    $("turn").innerHTML = html;

    // Every free box: what this throw gives; the forbidden ones greyed with the reason.
    if (turn && turn.throws.length && !state.pending) {
      const several = block.columns.length > 1;
      const shown = several ? turn.options.filter((o) => o.legal) : turn.options;
      const rows = shown.map((o) => {
        const best = state.suggested && state.suggested.box === o.box && state.suggested.column === o.column;
        const name = k.label(o.box, kids) + (several ? ` <small>(${k.esc(k.label(o.column))})</small>` : "");
        const pts = o.legal ? o.points + (o.extra_bonus ? ` <small>+${o.extra_bonus}</small>` : "") : "–";
        const why = o.legal ? "" : k.reason(o.reason, kids, true);
        return `<li class="${o.legal ? "legal" : "closed"}${best ? " best" : ""}" title="${k.esc(o.legal ? "" : k.reason(o.reason, kids))}">
          <span class="oname">${best ? "★ " : ""}${name}</span><span class="opts">${o.legal ? pts : `<span class="reason">${k.esc(why)}</span>`}</span></li>`;
      });
      if (several) {
        // Too many to list one by one: the forbidden boxes of a column, one line per reason.
        const closed = new Map();
        for (const o of turn.options.filter((o) => !o.legal)) {
          const key = `${o.column}\n${k.reason(o.reason, kids, true)}`;
          closed.set(key, [...(closed.get(key) || []), k.label(o.box, kids)]);
        }
        for (const [key, boxes] of closed) {
          const [column, why] = key.split("\n");
          rows.push(`<li class="closed" title="${k.esc(boxes.join(", "))}"><span class="oname"><small>(${k.esc(k.label(column))})</small> ${k.esc(boxes.length > 2 ? `${boxes[0]} … ${boxes[boxes.length - 1]} (${boxes.length})` : boxes.join(", "))}</span><span class="opts"><span class="reason">${k.esc(why)}</span></span></li>`);
        }
      }
      $("options").innerHTML = `<h3>${k.esc(k.t("options"))}</h3><ul class="olist" style="grid-template-rows: repeat(${Math.ceil(rows.length / 2)}, auto)">${rows.join("")}</ul>`;
      $("options").hidden = false;
    } else {
      $("options").hidden = true;
    }

    renderJoin();

    const banner = $("banner");
    if (state.notice && state.notice.id !== lastNotice && Date.now() / 1000 - state.notice.time < 10) {
      lastNotice = state.notice.id;
      banner.textContent = k.t(state.notice.code) !== state.notice.code ? k.t(state.notice.code) : state.notice.text;
      banner.hidden = false;
      clearTimeout(render.bannerTimer);
      render.bannerTimer = setTimeout(() => { banner.hidden = true; }, 6000);
    }
  }

  function renderJoin() {
    const box = $("join");
    if (join) {
      box.innerHTML = `<div class="qr" aria-label="QR">${join.qr_svg || ""}</div>
        <div class="join-text"><h3>${k.esc(k.t("join_title"))}</h3>
        <p>${k.esc(k.t("join_scan"))}<br>${k.esc(k.t("join_or_pin"))} <span class="url">${k.esc(join.phone_url.replace(/^https?:\/\//, ""))}</span></p>
        <p class="pin-line">${k.esc(k.t("pin"))} <strong id="pin-value">${k.esc(join.pin)}</strong></p></div>`;
    } else {
      box.innerHTML = `<div class="join-text"><h3>${k.esc(k.t("join_title"))}</h3><p>${k.esc(location.host)}/phone</p>
        <p class="hint">${k.esc(k.t("join_hidden"))}</p></div>`;
    }
  }

  async function start() {
    k.langButton($("lang"), render);
    await k.loadRules();
    const r = await k.api("GET", "/api/join");
    if (r.ok) join = r.data;
    k.live((s) => { state = k.newer(state, s); render(); }, (ok) => { document.body.classList.toggle("offline", !ok); });
  }
  start();
})();
