/* Shared by the table, phone and history pages: API calls, live updates, the dice, the
   Kniffel-Block and the two languages. Plain JS, no build step. */
"use strict";

const K = (() => {
  const UI = {
    de: {
      tap_to_fix: "Falsch gelesen? Würfel antippen.", die_flag: "Würfel {n}: {flag}",
      flag_tilted: "liegt schief", flag_stacked: "liegt auf oder an einem anderen", flag_cut: "am Bildrand",
      flag_unreadable: "nicht lesbar", flag_missing: "nicht gesehen", turn: "ist dran", throw_of: "Wurf {n} von 3", no_throw: "Würfeln!",
      no_throw_hint: "Die Kamera liest die Würfel, sobald sie liegen.",
      round: "Runde {n}", finished: "Spiel vorbei", winner: "Gewonnen: {names}",
      join_title: "Mitspielen", join_scan: "QR-Code scannen", join_or_pin: "oder PIN auf",
      join_hidden: "Die PIN steht auf dem Bildschirm am Tisch.",
      pin: "PIN", name: "Dein Name (für das Protokoll)", join: "Beitreten",
      camera_ok: "Kamera bereit", camera_moving: "Würfel rollen …",
      camera_failed: "Kamera ausgefallen – Würfe bitte von Hand eingeben",
      camera_off: "Ohne Kamera – Würfe von Hand eingeben",
      pending_title: "Bitte prüfen", pending_hint: "Tippe einen Würfel an und wähle den richtigen Wert – oder würfle neu.",
      accept: "So stimmt's", rethrow: "Neu würfeln",
      enter_box: "Eintragen", enter_for: "{box} für {player}", cancel: "Abbrechen",
      scratch: "Streichen", scratch_mode: "Feld streichen (0)", announce: "Ansagen",
      announced: "Angesagt: {box}",
      undo: "Rückgängig", undo_throw: "Wurf {n} von {player}", undo_enter: "{player}: {box} {points}",
      undo_announce: "Ansage {box}", nothing_undo: "Nichts rückgängig zu machen",
      manual: "Wurf eingeben", manual_next: "Nächsten Wurf eingeben", save_throw: "Wurf speichern",
      hold: "halten", held: "gehalten", pick_value: "Würfel {n}: welcher Wert?",
      new_game: "Neues Spiel", players: "Spieler", add_player: "+ Spieler",
      rules: "Regeln", variants: "Varianten", columns: "Spalten", start: "Spiel starten",
      save: "Speichern", camera: "Kamera", history: "Verlauf", menu: "Menü",
      phone_name: "Name dieses Handys", block: "Block", options: "Was der Wurf bringt",
      suggested: "Vorschlag", points: "Punkte", low_conf: "unsicher", corrected: "korrigiert",
      conflict: "Jemand war schneller – hier ist der aktuelle Stand.",
      not_joined: "Bitte zuerst beitreten (PIN oder QR-Code).",
      bad_pin: "Falsche PIN – sie steht auf dem Bildschirm am Tisch.",
      bad_token: "Dieser QR-Code gehört nicht zu diesem Tisch.",
      slow_down: "Zu viele falsche PINs – bitte kurz warten.",
      fourth_throw: "Drei Würfe sind um – bitte ein Feld wählen.",
      wrong_player: "Ein anderer Spieler ist dran.",
      die_missing: "Ein Würfel fehlt noch – antippen und Wert wählen.",
      game_over: "Das Spiel ist vorbei – neues Spiel oder Revanche?",
      offline: "Verbindung zum Tisch unterbrochen …",
      rematch: "Revanche", export: "Exportieren", import: "Importieren",
      stats: "Statistik", games: "Spiele", wins: "Siege", average: "Schnitt", best: "Bestes",
      bonus_rate: "Bonus-Quote", kniffels: "Kniffel", log: "Protokoll", open: "läuft",
      back: "Zurück", show_block: "Ganzer Block", player_order_locked: "Reihenfolge nur vor dem ersten Wurf änderbar",
      by: "von", table: "Tisch", seen: "gesehen", history_empty: "Noch keine Spiele.",
      joined_as: "Beigetreten als {name}", lang: "English",
      camera_paused: "Kalibrierung – Würfe werden gerade nicht gelesen",
      calibrate: "Kalibrieren", calib_done: "Fertig", calib_saved: "Gespeichert",
      calib_no_camera: "Keine Kamera in Betrieb – ohne Kamerabild gibt es nichts zu kalibrieren.",
      calib_paused: "Solange dieses Fenster offen ist, liest der Tisch keine Würfe.",
      calib_throw_area: "Wurfbereich", calib_keep_area: "Ablage", calib_exposure: "Belichtung",
      calib_focus: "Schärfe", calib_dice_set: "Würfelsatz", calib_corners: "{n} Ecken",
      calib_whole: "ganzes Bild", calib_none: "keine", calib_auto: "automatisch", calib_locked: "festgehalten",
      calib_areas: "Wurfbereich & Ablage markieren", calib_lock: "Belichtung & Weißabgleich festhalten",
      calib_unlock: "Belichtung wieder automatisch", calib_focus_now: "Scharfstellen",
      calib_turn: "Bild gelesen", calib_turn_value: "{deg}° gedreht", calib_turn_now: "Gelesenes Bild um 90° drehen",
      calib_turn_hint: "Die Seiten der Würfel sollen unter ihren oberen Flächen zu sehen sein, die nahe Tischkante unten im Bild: sonst drehen, bis es so ist.",
      calib_no_controls: "Diese Kamera ({kind}) hat keine Einstellungen für Belichtung, Weißabgleich oder Schärfe.",
      calib_check: "Prüfen: fünf Würfel gelesen?", calib_check_hint: "Wirf fünf Würfel in den Wurfbereich, dann Prüfen.",
      calib_teach: "Würfelsatz anlernen", check_ok: "Alle fünf Würfel gelesen.", check_bad: "Noch nicht gut gelesen:",
      area_throw: "Tippe die Ecken des Wurfbereichs an (mindestens 3).",
      area_keep: "Tippe die Ecken der Ablage für gehaltene Würfel an (mindestens 3) – oder lass sie leer.",
      area_set: "{n} Ecken gesetzt", area_reset: "Löschen", area_reload: "Neues Bild",
      teach_intro: "Bring dem Tisch eigene Würfel bei: Namen wählen, dann jede Seite einmal zeigen.",
      teach_name: "Name (Buchstaben, Ziffern, - _ .)", teach_pips: "Augen 1–6", teach_animals: "Tiere",
      teach_start: "Los", teach_need_name: "Bitte einen Namen eingeben.", teach_face_of: "Seite {n} von {of}",
      teach_lay: "Lege alle Würfel mit {face} nach oben in den Wurfbereich, Hände weg – dann Aufnehmen.",
      teach_capture: "Aufnehmen", teach_again: "Nochmal aufnehmen", teach_seen: "{n} Würfel gesehen", teach_seen_one: "1 Würfel gesehen",
      teach_none_seen: "Keine Würfel gesehen – liegen sie im Wurfbereich?", teach_next: "Weiter",
      teach_finish: "Anlernen & verwenden", teach_done: "Würfelsatz „{name}“ angelernt – der Tisch liest jetzt damit.",
      teach_done_doubt: "Würfelsatz „{name}“ angelernt, aber: {why}",
      teach_known: "Diesen Würfelsatz kennt der Tisch schon ({n} Seiten).",
      teach_add: "Hier dazulernen", teach_replace: "Neu anlernen",
      teach_added: "Würfelsatz „{name}“ hat dazugelernt – der Tisch liest jetzt damit.",
      teach_here: "Würfelsatz hier dazulernen lassen",
      dice_counted: "Würfel gesehen: {n}, erwartet: {of}",
      die_foreign: "Würfel {n} zeigt {face}: das gibt es bei diesen Würfeln nicht",
      teach_here_why: "Keiner dieser Würfel sieht aus wie auf den Anlern-Bildern des Würfelsatzes (anderes Licht, andere Kamera?).",
      other_kind_animals: "Diese Würfel sehen aus wie Tierwürfel, nicht wie Augenwürfel: für sie ein Spiel Kniffel Kids beginnen.",
      other_kind_pips: "Diese Würfel sehen aus wie Augenwürfel, nicht wie Tierwürfel: für sie ein Spiel Kniffel beginnen.",
      calib_learn: "Lernt am Tisch", calib_yes: "ja", calib_no: "nein",
      calib_learn_on: "Aus geprüften Würfen lernen lassen", calib_learn_off: "Nicht mehr aus geprüften Würfen lernen",
      calib_learn_hint: "Ein angelernter Würfelsatz lernt aus den Würfen, die ihr prüft und eintragt, wie seine Würfel an diesem Tisch aussehen – einmal je Start des Tisches, wenn er viel fragen musste.",
      calib_forget: "Vergessen, was „{name}“ an Tischen gelernt hat ({n} Würfel)", calib_forget_sure: "Wirklich vergessen? Nochmal tippen.",
      calib_forgot: "„{name}“ hat vergessen, was es an Tischen gelernt hat – der Tisch liest nur noch mit dem Angelernten.",
      learnt_here: "Der Würfelsatz hat aus den geprüften Würfen gelernt, wie seine Würfel an diesem Tisch aussehen.",
      learn_refused: "Aus den geprüften Würfen konnte der Würfelsatz nichts lernen: in diesem Licht sind seine Seiten kaum zu unterscheiden (mehr Licht hilft).",
      no_camera: "Keine Kamera in Betrieb – kalibrieren geht erst, wenn die Kamera läuft.",
      no_controls: "Diese Kamera hat keine Einstellungen für Belichtung, Weißabgleich oder Schärfe (nur die Raspberry-Pi-Kamera).",
      actors: {camera: "Kamera", button: "Taster am Tisch", demo: "Demo", import: "Import"},
      kinds: {throw: "Wurf", correct: "Korrektur", reread: "neu gelesen", pending: "Prüfen",
        dismiss: "verworfen", accept: "übernommen", announce: "Ansage", enter: "Eintrag",
        undo: "Rückgängig", players: "Spieler"},
    },
    en: {
      tap_to_fix: "Misread? Tap the die.", die_flag: "Die {n}: {flag}",
      flag_tilted: "tilted", flag_stacked: "lying on or against another die", flag_cut: "at the edge of the picture",
      flag_unreadable: "unreadable", flag_missing: "not seen", turn: "to play", throw_of: "Throw {n} of 3", no_throw: "Throw the dice!",
      no_throw_hint: "The camera reads the dice once they come to rest.",
      round: "Round {n}", finished: "Game over", winner: "Winner: {names}",
      join_title: "Join the game", join_scan: "Scan the QR code", join_or_pin: "or PIN at",
      join_hidden: "The PIN is shown on the table's screen.",
      pin: "PIN", name: "Your name (for the log)", join: "Join",
      camera_ok: "Camera ready", camera_moving: "Dice rolling …",
      camera_failed: "Camera failed – enter the throws by hand",
      camera_off: "No camera – enter the throws by hand",
      pending_title: "Please check", pending_hint: "Tap a die and pick its value – or throw again.",
      accept: "That's right", rethrow: "Throw again",
      enter_box: "Enter", enter_for: "{box} for {player}", cancel: "Cancel",
      scratch: "Scratch", scratch_mode: "Scratch a box (0)", announce: "Announce",
      announced: "Announced: {box}",
      undo: "Undo", undo_throw: "throw {n} of {player}", undo_enter: "{player}: {box} {points}",
      undo_announce: "announcement {box}", nothing_undo: "Nothing to undo",
      manual: "Enter throw", manual_next: "Enter next throw", save_throw: "Save throw",
      hold: "hold", held: "held", pick_value: "Die {n}: which value?",
      new_game: "New game", players: "Players", add_player: "+ Player",
      rules: "Rules", variants: "Variants", columns: "Columns", start: "Start game",
      save: "Save", camera: "Camera", history: "History", menu: "Menu",
      phone_name: "This phone's name", block: "Block", options: "What this throw scores",
      suggested: "suggested", points: "points", low_conf: "unsure", corrected: "corrected",
      conflict: "Someone was quicker – this is the current state.",
      not_joined: "Please join first (PIN or QR code).",
      bad_pin: "Wrong PIN – it is shown on the table's screen.",
      bad_token: "This QR code does not belong to this table.",
      slow_down: "Too many wrong PINs – please wait a moment.",
      fourth_throw: "Three throws are up – please choose a box.",
      wrong_player: "It is another player's turn.",
      die_missing: "A die is still missing – tap it and pick its value.",
      game_over: "The game is over – new game or rematch?",
      offline: "Connection to the table lost …",
      rematch: "Rematch", export: "Export", import: "Import",
      stats: "Statistics", games: "Games", wins: "Wins", average: "Average", best: "Best",
      bonus_rate: "Bonus rate", kniffels: "Kniffels", log: "Log", open: "in play",
      back: "Back", show_block: "Whole block", player_order_locked: "The order can only change before the first throw",
      by: "by", table: "table", seen: "seen", history_empty: "No games yet.",
      joined_as: "Joined as {name}", lang: "Deutsch",
      camera_paused: "Calibrating – throws are not read right now",
      calibrate: "Calibrate", calib_done: "Done", calib_saved: "Saved",
      calib_no_camera: "No camera running – without a camera picture there is nothing to calibrate.",
      calib_paused: "While this is open, the table reads no throws.",
      calib_throw_area: "Throw area", calib_keep_area: "Keep area", calib_exposure: "Exposure",
      calib_focus: "Focus", calib_dice_set: "Dice set", calib_corners: "{n} corners",
      calib_whole: "whole picture", calib_none: "none", calib_auto: "automatic", calib_locked: "locked",
      calib_areas: "Mark throw and keep area", calib_lock: "Lock exposure and white balance",
      calib_unlock: "Exposure automatic again", calib_focus_now: "Focus",
      calib_turn: "Picture read", calib_turn_value: "turned {deg}°", calib_turn_now: "Turn the picture read by 90°",
      calib_turn_hint: "The dice's sides should show below their tops, the table's near edge at the bottom of the picture: else turn until they do.",
      calib_no_controls: "This camera ({kind}) has no exposure, white balance or focus controls.",
      calib_check: "Check: five dice read?", calib_check_hint: "Throw five dice into the throw area, then Check.",
      calib_teach: "Teach a dice set", check_ok: "All five dice read.", check_bad: "Not read well yet:",
      area_throw: "Tap the corners of the throw area (at least 3).",
      area_keep: "Tap the corners of the keep area for held dice (at least 3) – or leave it empty.",
      area_set: "{n} corners set", area_reset: "Clear", area_reload: "New picture",
      teach_intro: "Teach the table your own dice: choose a name, then show each face once.",
      teach_name: "Name (letters, digits, - _ .)", teach_pips: "Pips 1–6", teach_animals: "Animals",
      teach_start: "Start", teach_need_name: "Please enter a name.", teach_face_of: "Face {n} of {of}",
      teach_lay: "Lay every die with {face} up in the throw area, hands away – then Capture.",
      teach_capture: "Capture", teach_again: "Capture again", teach_seen: "{n} dice seen", teach_seen_one: "1 die seen",
      teach_none_seen: "No dice seen – are they in the throw area?", teach_next: "Next",
      teach_finish: "Teach & use", teach_done: "Dice set “{name}” taught – the table reads with it now.",
      teach_done_doubt: "Dice set “{name}” taught, but: {why}",
      teach_known: "The table knows this dice set already ({n} faces).",
      teach_add: "Add what it sees here", teach_replace: "Teach it anew",
      teach_added: "Dice set “{name}” learnt more – the table reads with it now.",
      teach_here: "Teach the dice set here too",
      dice_counted: "Dice seen: {n}, expected: {of}",
      die_foreign: "Die {n} shows {face}, which these dice do not have",
      teach_here_why: "None of these dice looks like the dice set's teaching pictures (other light, another camera?).",
      other_kind_animals: "These dice look like animal dice, not pip dice: start a Kniffel Kids game for them.",
      other_kind_pips: "These dice look like pip dice, not animal dice: start a Kniffel game for them.",
      calib_learn: "Learns at the table", calib_yes: "yes", calib_no: "no",
      calib_learn_on: "Let it learn from checked throws", calib_learn_off: "Stop learning from checked throws",
      calib_learn_hint: "A taught dice set learns from the throws you check and enter how its dice look at this table – once per start of the table, where it had to ask much.",
      calib_forget: "Forget what “{name}” learnt at tables ({n} dice)", calib_forget_sure: "Really forget? Tap again.",
      calib_forgot: "“{name}” forgot what it learnt at tables – the table reads with what it was taught only.",
      learnt_here: "The dice set learnt from the checked throws how its dice look at this table.",
      learn_refused: "The dice set could not learn from the checked throws: in this light its faces are too hard to tell apart (more light helps).",
      no_camera: "No camera running – calibrate once the camera works.",
      no_controls: "This camera has no exposure, white balance or focus controls (only the Raspberry Pi camera has).",
      actors: {camera: "camera", button: "table button", demo: "demo", import: "import"},
      kinds: {throw: "throw", correct: "correction", reread: "re-read", pending: "check",
        dismiss: "dropped", accept: "accepted", announce: "announce", enter: "entry",
        undo: "undo", players: "players"},
    },
  };
  const ANIMAL = {duck: "🦆", lion: "🦁", mouse: "🐭", cat: "🐱", dog: "🐶", elephant: "🐘"};
  const PIPS = {1: [[50, 50]], 2: [[28, 28], [72, 72]], 3: [[26, 26], [50, 50], [74, 74]],
    4: [[28, 28], [72, 28], [28, 72], [72, 72]],
    5: [[27, 27], [73, 27], [50, 50], [27, 73], [73, 73]],
    6: [[28, 24], [72, 24], [28, 50], [72, 50], [28, 76], [72, 76]]};

  const k = {
    lang: localStorage.getItem("kniffel-lang") || document.documentElement.lang || "de",
    labels: null,
    rules: null,
  };

  k.t = (key, params) => {
    let s = (UI[k.lang] || UI.de)[key];
    if (s === undefined) s = UI.en[key] ?? key;
    if (params) for (const [p, v] of Object.entries(params)) s = s.replaceAll(`{${p}}`, v);
    return s;
  };
  k.actor = (who) => (UI[k.lang] || UI.de).actors[who] || who;
  k.kind = (kind) => (UI[k.lang] || UI.de).kinds[kind] || kind;
  k.esc = (s) => String(s ?? "").replace(/[&<>"']/g,
    (c) => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"}[c]));
  k.label = (key, kids) => {
    const table = (k.labels && (k.labels[k.lang] || k.labels.de)) || {};
    if (kids && table["kids_" + key]) return table["kids_" + key];
    return table[key] || key;
  };
  k.setLang = (lang) => {
    k.lang = lang;
    localStorage.setItem("kniffel-lang", lang);
    document.documentElement.lang = lang;
  };
  k.langButton = (el, rerender) => {
    const paint = () => { el.textContent = k.lang === "de" ? "EN" : "DE"; el.title = k.t("lang"); };
    paint();
    el.addEventListener("click", () => { k.setLang(k.lang === "de" ? "en" : "de"); paint(); rerender(); });
  };

  /* The engine explains refusals in English; the block shows them in the table's language. */
  k.reason = (text, kids, short) => {
    if (short && text && text.startsWith("does not fit")) return k.lang === "de" ? "passt nicht" : "does not fit";
    if (!text || k.lang === "en") return text ? text.replace(/\b([a-z]+(?:_[a-z]+)+|ones|twos|threes|fours|fives|sixes|chance|kniffel)\b/g, (m) => k.label(m, kids)) : "";
    const L = (b) => k.label(b, kids);
    let m;
    if (text.startsWith("does not fit")) return "passt nicht – streichen erst, wenn der Wurf in kein freies Feld passt";
    if ((m = text.match(/^column (\w+) is filled top to bottom: next is (\w+)/))) return `Spalte „${k.label(m[1])}“ von oben: als Nächstes ${L(m[2])}`;
    if ((m = text.match(/^column (\w+) is filled bottom to top: next is (\w+)/))) return `Spalte „${k.label(m[1])}“ von unten: als Nächstes ${L(m[2])}`;
    if ((m = text.match(/^announced (\w+)/))) return `${L(m[1])} angesagt: eintragen oder ein Feld streichen`;
    if (text.startsWith("announce this box")) return "nach dem ersten Wurf ansagen, um es zu werten";
    if ((m = text.match(/^a further Kniffel must go into (\w+)/))) return `ein weiterer Kniffel muss in ${L(m[1])}, solange es frei ist`;
    return text;
  };

  /* ---- the API -------------------------------------------------------------------- */

  k.api = async (method, path, body) => {
    const opts = {method, credentials: "same-origin", headers: {}};
    if (body !== undefined) {
      opts.headers["Content-Type"] = "application/json";
      opts.body = JSON.stringify(body);
    }
    let resp;
    try {
      resp = await fetch(path, opts);
    } catch (e) {
      return {ok: false, status: 0, error: {code: "offline", message: k.t("offline")}};
    }
    let data = null;
    try { data = await resp.json(); } catch (e) { data = null; }
    if (resp.ok) return {ok: true, status: resp.status, data};
    return {ok: false, status: resp.status, data, error: (data && data.error) || {code: "error", message: resp.statusText}};
  };
  k.errorText = (error) => {
    const known = (UI[k.lang] || UI.de)[error.code];
    return typeof known === "string" ? known : error.message;
  };

  k.loadRules = async () => {
    if (k.labels) return;
    const r = await k.api("GET", "/api/rules");
    if (r.ok) { k.labels = r.data.labels; k.rules = r.data; }
  };

  /* Of the state a page holds and one that arrives, the one to keep: an answer to the
     page's own change can arrive after a later state pushed to it (a camera failing just
     then), and must not take its place. `seq` counts the service's publications within
     one `boot` of it. */
  k.newer = (held, arrived) => {
    if (!held || !arrived) return arrived || held;
    return arrived.boot !== held.boot || !(arrived.seq < held.seq) ? arrived : held;
  };

  /* Live state: Server-Sent Events; polling when they are not available. */
  k.live = (onState, onConnection) => {
    let fails = 0, poller = null, source = null;
    const poll = async () => {
      const r = await k.api("GET", "/api/state");
      if (r.ok) { onState(r.data); onConnection && onConnection(true); }
      else onConnection && onConnection(false);
    };
    const start = () => {
      source = new EventSource("/api/events");
      source.addEventListener("state", (e) => { fails = 0; onConnection && onConnection(true); onState(JSON.parse(e.data)); });
      source.onerror = () => {
        fails += 1;
        onConnection && onConnection(false);
        if (fails >= 4 && !poller) { source.close(); poller = setInterval(poll, 2000); setTimeout(() => { clearInterval(poller); poller = null; fails = 0; start(); }, 60000); }
      };
    };
    start();
    return {refresh: poll};
  };

  /* ---- dice ----------------------------------------------------------------------- */

  k.die = (value, opts = {}) => {
    const cls = ["die"];
    if (opts.unsure) cls.push("unsure");
    if (opts.corrected) cls.push("corrected");
    if (opts.held) cls.push("held");
    if (value === null || value === undefined) cls.push("unknown");
    let inner;
    if (value === null || value === undefined) {
      inner = `<text x="50" y="66" text-anchor="middle" font-size="48" fill="#b3261e">?</text>`;
    } else if (ANIMAL[value]) {
      inner = `<text x="50" y="70" text-anchor="middle" font-size="56">${ANIMAL[value]}</text>`;
    } else {
      const pips = PIPS[value] || [];
      inner = pips.map(([x, y]) => `<circle cx="${x}" cy="${y}" r="9.5"/>`).join("");
    }
    const badge = opts.unsure ? `<circle class="badge" cx="88" cy="12" r="12"/><text x="88" y="19" text-anchor="middle" font-size="18" fill="#fff">?</text>` :
      opts.corrected ? `<circle class="badge fixed" cx="88" cy="12" r="12"/><text x="88" y="18" text-anchor="middle" font-size="16" fill="#fff">✓</text>` : "";
    const title = opts.title ? `<title>${k.esc(opts.title)}</title>` : "";
    return `<svg class="${cls.join(" ")}" viewBox="-2 -2 104 104" role="img" aria-label="${k.esc(value ?? "?")}">${title}<rect class="face" x="2" y="2" width="96" height="96" rx="18"/>${inner}${badge}</svg>`;
  };
  /* Why the camera's throw needs a look: its problems, and every flagged or missing die. */
  k.pendingLines = (pending) => {
    const lines = [...pending.problems];
    if (pending.count) lines.unshift(k.t("dice_counted", {n: pending.count.seen, of: pending.count.expected}));
    if (pending.teach_here) lines.push(k.t("teach_here_why"));
    if (pending.other_kind) lines.push(k.t("other_kind_" + pending.other_kind));
    const foreign = pending.foreign || [];
    foreign.forEach((f) => lines.push(k.t("die_foreign", {n: f.die, face: k.faceName(f.shows)})));
    pending.dice.forEach((v, i) => {
      if (foreign.some((f) => f.die === i + 1)) return;  // said above: it was seen
      const flag = pending.flags[i] || (v === null ? "missing" : null);
      if (flag) lines.push(k.t("die_flag", {n: i + 1, flag: k.t("flag_" + flag)}));
    });
    return lines;
  };
  k.faceName = (value, kids) => (typeof value === "string" ? k.label(value, kids) : String(value));

  /* What the page should show as the dice of the turn: pending throw first, then the last. */
  k.currentDice = (state) => {
    if (state.pending) {
      return state.pending.dice.map((v, i) => ({value: v, unsure: !!state.pending.flags[i] || v === null,
        title: state.pending.flags[i] || ""}));
    }
    const turn = state.block.turn;
    if (!turn || !turn.throws.length) return null;
    const last = turn.throws[turn.throws.length - 1];
    const info = state.last_throw || {};
    return last.dice.map((v, i) => {
      const conf = info.confidence ? info.confidence[i] : null;
      const flag = info.flags ? info.flags[i] : null;
      return {value: v, unsure: !!flag,  // the reader flags every die it is not sure of
        corrected: (info.corrected || []).includes(i),
        held: (last.held || []).includes(i),
        title: flag || (conf != null ? `${Math.round(conf * 100)} %` : "")};
    });
  };

  /* ---- the Kniffel-Block ---------------------------------------------------------- */

  k.block = (block, sheet, opts = {}) => {
    const kids = sheet.kids;
    const several = block.columns.length > 1;
    const turn = block.turn;
    const cols = [];
    block.players.forEach((p, pi) => p.columns.forEach((c) => cols.push({p, pi, c})));
    const current = turn ? turn.player : null;
    const options = {};
    if (turn && opts.preview !== false) for (const o of turn.options) options[`${o.column}/${o.box}`] = o;
    const th = cols.map(({p, c}, i) => {
      const first = i === 0 || cols[i - 1].p !== p;
      const cur = p.name === current ? " current" : "";
      const win = block.winners.includes(p.name) ? " winner" : "";
      return `<th class="pcol${cur}${win}${first ? " first" : ""}" scope="col"><span class="pname">${k.esc(p.name)}</span>${several ? `<span class="cname">${k.esc(k.label(c.name))}</span>` : ""}</th>`;
    }).join("");
    const cell = (v, col, box) => {
      const first = cols.indexOf(col) === 0 || cols[cols.indexOf(col) - 1].p !== col.p;
      const cls = ["v"];
      if (first) cls.push("first");
      if (col.p.name === current) cls.push("current");
      if (v !== null && v !== undefined) return `<td class="${cls.join(" ")}">${v}</td>`;
      const o = col.p.name === current ? options[`${col.c.name}/${box}`] : null;
      if (!o) return `<td class="${cls.join(" ")}"></td>`;
      if (o.legal) {
        cls.push("preview");
        if (opts.suggested && opts.suggested.box === box && opts.suggested.column === col.c.name) cls.push("best");
        return `<td class="${cls.join(" ")}" title="${k.esc(k.label(box, kids))}">${o.points}</td>`;
      }
      cls.push("closed");
      return `<td class="${cls.join(" ")}" title="${k.esc(k.reason(o.reason, kids))}">–</td>`;
    };
    const row = (name, values, cls) => `<tr class="${cls || ""}"><th scope="row">${k.esc(name)}</th>${values.join("")}</tr>`;
    const sumCell = (col, v) => {
      const first = cols.indexOf(col) === 0 || cols[cols.indexOf(col) - 1].p !== col.p;
      return `<td class="v${first ? " first" : ""}${col.p.name === current ? " current" : ""}">${v}</td>`;
    };
    const rows = [];
    for (const b of sheet.upper) rows.push(row(k.label(b, kids), cols.map((col) => cell(col.c.boxes[b], col, b)), "box"));
    if (sheet.bonus) {
      rows.push(row(k.label("upper_sum"), cols.map((col) => sumCell(col, col.c.upper_sum)), "sum"));
      rows.push(row(k.label("bonus"), cols.map((col) => sumCell(col, col.c.bonus)), "sum"));
      rows.push(row(k.label("upper_total"), cols.map((col) => sumCell(col, col.c.upper_sum + col.c.bonus)), "sum strong"));
    }
    rows.push(`<tr class="gap"><td colspan="${cols.length + 1}"></td></tr>`);
    for (const b of sheet.lower) rows.push(row(k.label(b, kids), cols.map((col) => cell(col.c.boxes[b], col, b)), "box"));
    if (sheet.bonus) {
      rows.push(row(k.label("extra_bonus"), cols.map((col) => sumCell(col, col.c.extra_bonus)), "sum"));
      rows.push(row(k.label("lower_sum"), cols.map((col) => sumCell(col, col.c.lower_sum + col.c.extra_bonus)), "sum"));
      rows.push(row(k.label("upper_total"), cols.map((col) => sumCell(col, col.c.upper_sum + col.c.bonus)), "sum"));
    }
    if (several) {
      rows.push(row(k.label("total") + " (" + k.label("column") + ")", cols.map((col) => sumCell(col, col.c.total)), "sum"));
    }
    const totals = cols.map((col, i) => {
      const first = i === 0 || cols[i - 1].p !== col.p;
      if (!first) return "";
      const span = col.p.columns.length;
      return `<td class="v total first${col.p.name === current ? " current" : ""}" colspan="${span}">${col.p.total}</td>`;
    });
    rows.push(`<tr class="sum total"><th scope="row">${k.esc(k.label("total"))}</th>${totals.join("")}</tr>`);
    return `<table class="kblock${cols.length > 6 ? " dense" : ""}"><thead><tr><th class="corner">${k.esc(sheet.title)}</th>${th}</tr></thead><tbody>${rows.join("")}</tbody></table>`;
  };

  k.undoText = (undo, kids) => {
    if (!undo) return k.t("nothing_undo");
    if (undo.kind === "throw") return k.t("undo_throw", {n: undo.number, player: undo.player});
    if (undo.kind === "announce") return k.t("undo_announce", {box: k.label(undo.box, kids)});
    return k.t("undo_enter", {player: undo.player, box: k.label(undo.box, kids), points: undo.points ?? ""});
  };

  k.toast = (text, kind) => {
    let box = document.getElementById("toast");
    if (!box) {
      box = document.createElement("div");
      box.id = "toast";
      box.setAttribute("role", "status");
      box.setAttribute("aria-live", "polite");
      document.body.appendChild(box);
    }
    box.textContent = text;
    box.className = "show " + (kind || "");
    clearTimeout(k._toastTimer);
    // long enough to read: a warning may be a sentence or two
    k._toastTimer = setTimeout(() => { box.className = ""; }, Math.max(4500, 60 * text.length));
  };

  k.time = (t) => new Date(t * 1000).toLocaleString(k.lang === "de" ? "de-DE" : "en-GB",
    {dateStyle: "medium", timeStyle: "short"});

  return k;
})();
