"""The API described as OpenAPI 3.1 (served at /api/openapi.json).

Written by hand, next to the routes in web/api.py; a test checks that every /api route is
here and nothing here is missing from the routes, so the two cannot drift apart.
"""

from __future__ import annotations

from typing import Any

from game.rules import RULESETS, VARIANTS
from web.config import TURN_DEGREES
from web.service import COLUMN_KINDS


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _json(schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


ERRORS = {
    "400": {"$ref": "#/components/responses/BadRequest"},
    "401": {"$ref": "#/components/responses/NotJoined"},
    "403": {"$ref": "#/components/responses/CrossSite"},
    "404": {"$ref": "#/components/responses/NotFound"},
    "409": {"$ref": "#/components/responses/Conflict"},
    "415": {"$ref": "#/components/responses/BadRequest"},
    "422": {"$ref": "#/components/responses/NotAllowed"},
}

#: Optional guard of a new game: the game the phone saw on the table (409 when another phone
#: started one meanwhile).
REPLACES = {"type": "integer", "description": "the game on the table when the phone asked; "
            "409 with the fresh state when another game was started meanwhile"}
GAME_ID = {"name": "game_id", "in": "path", "required": True, "schema": {"type": "integer"}}


def _change(summary: str, description: str, body: dict[str, Any]) -> dict[str, Any]:
    props = {"version": {"type": "integer", "description":
                         "the game's version (event count) this change is based on"}}
    props.update(body.get("properties", {}))
    schema = {"type": "object", "additionalProperties": False,
              "required": ["version", *body.get("required", [])], "properties": props}
    return {"post": {
        "summary": summary, "description": description, "tags": ["changes"],
        "security": [{"session": []}],
        "parameters": [GAME_ID],
        "requestBody": {"required": True, "content": {"application/json": {"schema": schema}}},
        "responses": {"200": _json(_ref("TableState"), "the new state of the table"),
                      **ERRORS},
    }}


CALIBRATION_ERRORS = {
    "400": ERRORS["400"], "401": ERRORS["401"], "403": ERRORS["403"],
    "409": {"$ref": "#/components/responses/CalibrationConflict"},
    "415": ERRORS["415"], "422": {"$ref": "#/components/responses/CalibrationFailed"},
}


def _calibrate(summary: str, description: str = "", body: dict[str, Any] | None = None,
               answer: dict[str, Any] | None = None) -> dict[str, Any]:
    """A calibration step: a joined phone, this server's page, the camera of the table."""
    operation: dict[str, Any] = {
        "summary": summary, "description": description, "tags": ["calibration"],
        "security": [{"session": []}],
        "responses": {"200": _json(answer or _ref("Calibration"), "done"),
                      **CALIBRATION_ERRORS}}
    if body is not None:
        operation["requestBody"] = {"required": True, "content": {"application/json": {
            "schema": {"type": "object", "additionalProperties": False, **body}}}}
    return {"post": operation}


POINTS = {"type": "array", "items": {"type": "array", "items": {"type": "number",
                                                                 "minimum": 0},
                                     "minItems": 2, "maxItems": 2},
          "description": "corners [x, y] in main-stream pixels (see `size`)"}

FACE = {"oneOf": [{"type": "integer", "minimum": 1, "maximum": 6},
                  {"type": "string", "enum": ["duck", "lion", "mouse", "cat", "dog",
                                              "elephant"]}]}


def spec() -> dict[str, Any]:
    """The OpenAPI document."""
    paths: dict[str, Any] = {
        "/api/state": {"get": {
            "summary": "The table: current game, block, dice, pending throw, camera",
            "tags": ["table"],
            "responses": {"200": _json(_ref("TableState"), "the table's state")}}},
        "/api/events": {"get": {
            "summary": "Server-Sent Events: `event: state` with a TableState on every change",
            "tags": ["table"],
            "responses": {"200": {"description": "an event stream",
                                  "content": {"text/event-stream": {}}},
                          "503": {"$ref": "#/components/responses/Unavailable"}}}},
        "/api/camera.mjpeg": {"get": {
            "summary": "Camera preview with the detected dice drawn in (MJPEG)",
            "tags": ["table"], "security": [{"session": []}],
            "responses": {"200": {"description": "multipart/x-mixed-replace JPEG frames",
                                  "content": {"multipart/x-mixed-replace": {}}},
                          "401": ERRORS["401"],
                          "503": {"$ref": "#/components/responses/Unavailable"}}}},
        "/api/rules": {"get": {
            "summary": "Rulesets, variants, columns and the block's row names (de, en)",
            "tags": ["table"], "responses": {"200": _json({"type": "object"}, "what can be "
                                                                           "played")}}},
        "/api/session": {
            "get": {"summary": "Is this browser a joined phone?", "tags": ["joining"],
                    "responses": {"200": _json(_ref("Session"), "the session")}},
            "post": {
                "summary": "Join the table with the PIN or the QR code's token",
                "description": "Sets the session cookie (HttpOnly, SameSite=Strict). Wrong "
                               "PINs are slowed down: 429 with Retry-After.",
                "tags": ["joining"],
                "requestBody": {"required": True, "content": {"application/json": {"schema": {
                    "type": "object", "additionalProperties": False,
                    "properties": {"pin": {"type": "string", "pattern": "^[0-9]{4}$"},
                                   "token": {"type": "string"},
                                   "name": {"type": "string", "maxLength": 24,
                                            "description": "the phone's name in the log"}}}}}},
                "responses": {"200": _json(_ref("Session"), "joined"),
                              "400": ERRORS["400"], "401": ERRORS["401"],
                              "403": ERRORS["403"],
                              "429": {"$ref": "#/components/responses/SlowDown"}}}},
        "/api/session/name": {"post": {
            "summary": "Rename this phone (as it appears in the games' logs)",
            "tags": ["joining"], "security": [{"session": []}],
            "requestBody": {"required": True, "content": {"application/json": {"schema": {
                "type": "object", "required": ["name"],
                "properties": {"name": {"type": "string", "maxLength": 24}}}}}},
            "responses": {"200": _json(_ref("Session"), "renamed"), **ERRORS}}},
        "/api/join": {"get": {
            "summary": "PIN, join URL and QR code (SVG)",
            "description": "Only for the table's own screen (loopback) and joined phones.",
            "tags": ["joining"],
            "responses": {"200": _json({"type": "object", "properties": {
                "pin": {"type": "string"}, "url": {"type": "string"},
                "phone_url": {"type": "string"},
                "qr_svg": {"type": ["string", "null"]}}}, "how to join"),
                "401": ERRORS["401"]}}},
        "/api/games": {
            "get": {"summary": "All games, newest first", "tags": ["games"],
                    "responses": {"200": _json({"type": "object", "properties": {
                        "games": {"type": "array", "items": _ref("GameSummary")}}},
                        "the games")}},
            "post": {"summary": "Start a new game (it becomes the table's game)",
                     "tags": ["games"], "security": [{"session": []}],
                     "requestBody": {"required": True, "content": {"application/json": {
                         "schema": _ref("Setup")}}},
                     "responses": {"201": _json(_ref("TableState"), "the new game"),
                                   **ERRORS}}},
        "/api/games/import": {"post": {
            "summary": "Import a kniffel-record/1 (an unfinished one goes on at the table)",
            "tags": ["games"], "security": [{"session": []}],
            "requestBody": {"required": True, "content": {"application/json": {
                "schema": _ref("Record")}}},
            "responses": {"201": _json(_ref("TableState"), "imported; `imported` is its id"),
                          **ERRORS}}},
        "/api/games/{game_id}": {"get": {
            "summary": "Read a game: the same JSON as `kniffel replay --json`",
            "description": "The ETag header carries the game's id and version.",
            "tags": ["games"], "parameters": [GAME_ID],
            "responses": {"200": _json(_ref("Block"), "the block"), "404": ERRORS["404"]}}},
        "/api/games/{game_id}/detail": {"get": {
            "summary": "A game with its block and its log (who changed what, from which "
                       "phone)",
            "description": "Each log entry: seq, kind, time, actor, by (the phone's name), "
                           "payload (as recorded); a `pending` entry also has `pending`, the "
                           "throw as the table showed it (see TableState's `pending`).",
            "tags": ["games"], "parameters": [GAME_ID],
            "responses": {"200": _json({"type": "object"}, "the game and its log"),
                          "404": ERRORS["404"]}}},
        "/api/games/{game_id}/record": {"get": {
            "summary": "Export the game as kniffel-record/1 (`?download=1` for a file)",
            "tags": ["games"], "parameters": [GAME_ID],
            "responses": {"200": _json(_ref("Record"), "the record"), "404": ERRORS["404"]}}},
        "/api/games/{game_id}/rematch": {"post": {
            "summary": "Rematch: a new game with the same players and rules",
            "tags": ["games"], "security": [{"session": []}], "parameters": [GAME_ID],
            "requestBody": {"required": False, "content": {"application/json": {"schema": {
                "type": "object", "additionalProperties": False,
                "properties": {"replaces": REPLACES}}}}},
            "responses": {"201": _json(_ref("TableState"), "the new game"), **ERRORS}}},
        "/api/games/{game_id}/throws": _change(
            "Post a throw", "Five dice; `held` lists the positions (0-4) kept from the "
            "previous throw (null: unknown). The first throw of a turn is always all five. "
            "A fourth throw is refused (422, code fourth_throw).",
            {"required": ["dice"], "properties": {
                "dice": {"type": "array", "items": FACE, "minItems": 5, "maxItems": 5},
                "held": {"type": ["array", "null"], "items": {"type": "integer", "minimum": 0,
                                                              "maximum": 4}},
                "player": {"type": "string", "description": "refused unless it is this "
                                                            "player's turn"}}}),
        "/api/games/{game_id}/corrections": _change(
            "Correct one die", "Of the throw waiting to be checked if there is one, else of "
            "the last throw (which is replaced through the rules engine). Logged with the "
            "phone.",
            {"required": ["index", "value"], "properties": {
                "index": {"type": "integer", "minimum": 0, "maximum": 4}, "value": FACE}}),
        "/api/games/{game_id}/accept": _change(
            "Accept the throw waiting to be checked as it is", "", {}),
        "/api/games/{game_id}/dismiss": _change(
            "Drop the throw waiting to be checked (the player throws again)", "", {}),
        "/api/games/{game_id}/announce": _change(
            "Announce a box of the announce column (after the first throw)", "",
            {"required": ["box"], "properties": {"box": {"type": "string"}}}),
        "/api/games/{game_id}/entries": _change(
            "Enter the throw into a box (ends the turn)", "",
            {"required": ["box"], "properties": {
                "box": {"type": "string"}, "column": {"type": ["string", "null"]},
                "scratch": {"type": "boolean"}, "player": {"type": "string"}}}),
        "/api/games/{game_id}/undo": _change(
            "Undo the last move (throw, announcement or entry); repeat to go further back",
            "", {}),
        "/api/games/{game_id}/players": _change(
            "Rename players (all names, in order); `order` reorders them before the first "
            "throw", "",
            {"required": ["players"], "properties": {
                "players": {"type": "array", "items": {"type": "string"}},
                "order": {"type": "array", "items": {"type": "integer"},
                          "description": "order[i] = old position of the new i-th player"}}}),
        "/api/calibration": {"get": {
            "summary": "What is calibrated: areas, exposure, focus, dice set, the camera",
            "description": "`camera.available`: a camera loop runs (else nothing that needs "
                           "a picture can be done); `camera.controls`: it has exposure, white "
                           "balance and focus controls (the Raspberry Pi camera).",
            "tags": ["calibration"], "security": [{"session": []}],
            "responses": {"200": _json(_ref("Calibration"), "the calibration"),
                          "401": ERRORS["401"], "409": CALIBRATION_ERRORS["409"]}}},
        "/api/calibration/snapshot.jpg": {"get": {
            "summary": "A still of the camera's main stream now, to mark the areas on",
            "tags": ["calibration"], "security": [{"session": []}],
            "responses": {"200": {"description": "a JPEG (scaled down; the areas are in "
                                                 "`size` pixels all the same)",
                                  "content": {"image/jpeg": {}}},
                          "401": ERRORS["401"], "409": CALIBRATION_ERRORS["409"],
                          "422": CALIBRATION_ERRORS["422"]}}},
        "/api/calibration/begin": _calibrate(
            "Start calibrating: the table reads no throws (camera state `paused`)",
            "Every calibration step renews the pause; it ends with /end or 10 "
            "minutes after the last step."),
        "/api/calibration/end": _calibrate("Calibration finished: the table reads throws "
                                           "again"),
        "/api/calibration/areas": _calibrate(
            "Save the throw area and the keep area", "Saved to config.toml and watched "
            "from the next frame on.",
            {"required": ["throw_area"], "properties": {
                "throw_area": {**POINTS, "minItems": 3},
                "keep_area": {**POINTS, "description": "at least 3 corners, or [] for none"}}}),
        "/api/calibration/exposure": _calibrate(
            "Lock exposure and white balance at what the camera chooses now, or unlock",
            "Raspberry Pi camera only (422 no_controls on others).",
            {"required": ["locked"], "properties": {"locked": {"type": "boolean"}}}),
        "/api/calibration/focus": _calibrate(
            "Focus once (autofocus) and keep the lens there",
            "Camera Module 3 only (422 on cameras without autofocus)."),
        "/api/calibration/turn": _calibrate(
            "Turn the camera's picture upright for the reader: degrees clockwise",
            "The table's side nearest the camera at the bottom; the areas stay in the "
            "camera's own pixels.",
            {"required": ["turn"], "properties": {"turn": {"enum": list(TURN_DEGREES)}}}),
        "/api/calibration/check": _calibrate(
            "Read the picture now: are exactly five dice in the throw area read?", "",
            None, {"type": "object", "properties": {
                "ok": {"type": "boolean"}, "values": {"type": "array", "items": FACE},
                "message": {"type": "string"},
                "picture": {"type": "string", "description": "data: URL, dice drawn in"}}}),
        "/api/calibration/teach/capture": _calibrate(
            "Teaching a dice set: the picture for one face (every die with it up)",
            "Taking a face again replaces its picture. Pictures are kept for this phone "
            "and set name until the set is taught.",
            {"required": ["name", "face"], "properties": {
                "name": {"type": "string", "pattern": "^[A-Za-z0-9][A-Za-z0-9_.-]{0,39}$"},
                "face": FACE}},
            {"type": "object", "properties": {
                "face": FACE, "dice": {"type": "integer", "description":
                                       "dice seen in the throw area"},
                "captured": {"type": "array", "items": FACE},
                "picture": {"type": "string"}}}),
        "/api/calibration/forget-learnt": _calibrate(
            "Take back what a taught dice set learnt at tables",
            "The dice it learnt from the throws people checked (`learnt`) are dropped; what "
            "its pictures taught stays. The table's set reads without them from now on.",
            {"required": ["name"], "properties": {"name": {"type": "string"}}},
            {"allOf": [_ref("Calibration"), {"type": "object", "properties": {
                "forgot": {"type": "object", "properties": {
                    "name": {"type": "string"}, "message": {"type": "string"}}}}}]}),
        "/api/calibration/learn": _calibrate(
            "Whether taught dice sets learn the table from the throws people check",
            "Saved to config.toml as table.learn.",
            {"required": ["learn"], "properties": {"learn": {"type": "boolean"}}}),
        "/api/calibration/teach": _calibrate(
            "Teach the dice set from the captured pictures and read with it from now on",
            "Saved in the state directory's dice-sets; config.toml's table.dice_set names it.",
            {"required": ["name", "faces"], "properties": {
                "name": {"type": "string"},
                "faces": {"type": "array", "items": FACE, "minItems": 2, "uniqueItems": True,
                          "description": "all pips or all animals"},
                "add": {"type": "boolean", "default": False, "description":
                        "add to the set taught before under this name (the same dice in "
                        "this light; every face it has) instead of replacing it"}}},
            {"allOf": [_ref("Calibration"), {"type": "object", "properties": {
                "taught": {"type": "object", "properties": {
                    "name": {"type": "string"},
                    "dice": {"type": "array", "items": {"type": "object", "properties": {
                        "face": FACE, "count": {"type": "integer"}}}},
                    "before": {"type": "integer", "description":
                               "dice the set had before (0: a new set)"},
                    "warnings": {"type": "array", "items": {"type": "string"},
                                 "description": "faces the pictures do not tell apart "
                                                "well: take them again"}}}}}]}),
        "/api/stats": {"get": {
            "summary": "Per player over finished games: games, wins, average, bonus rate, "
                       "Kniffels",
            "tags": ["games"],
            "responses": {"200": _json({"type": "object"}, "statistics")}}},
        "/api/openapi.json": {"get": {
            "summary": "This document", "tags": ["table"],
            "responses": {"200": _json({"type": "object"}, "OpenAPI 3.1")}}},
    }
    error = {"type": "object", "required": ["error"], "properties": {
        "error": {"type": "object", "required": ["code", "message"], "properties": {
            "code": {"type": "string"}, "message": {"type": "string"}}},
        "state": _ref("TableState")}}
    return {
        "openapi": "3.1.0",
        "info": {"title": "Kniffel table", "version": "1",
                 "description": "The Kniffel-Block of the table. Reading is open; changes need "
                                "a session cookie (POST /api/session with the PIN or the QR "
                                "token) and an Origin header naming this server. Every change "
                                "carries the `version` it is based on; a stale one gets 409 "
                                "with the fresh state."},
        "paths": paths,
        "components": {
            "securitySchemes": {"session": {"type": "apiKey", "in": "cookie",
                                            "name": "kniffel_session"}},
            "responses": {
                "BadRequest": _json(error, "malformed request; nothing changed"),
                "NotJoined": _json(error, "not joined (no or unknown session)"),
                "CrossSite": _json(error, "cross-site request refused"),
                "NotFound": _json(error, "no such game or address"),
                "Conflict": _json(error, "stale version: `state` is the fresh state"),
                "NotAllowed": _json(error, "the rules do not allow it now; nothing changed"),
                "SlowDown": _json(error, "too many wrong PINs; see Retry-After"),
                "Unavailable": _json(error, "no camera, or too many viewers"),
                "CalibrationConflict": _json(error, "no camera is running (no_camera), or "
                                                    "config.toml is broken or cannot be "
                                                    "written (config_not_saved); nothing "
                                                    "changed"),
                "CalibrationFailed": _json(error, "the camera cannot do it (no_controls) or "
                                                  "the step did not work "
                                                  "(cannot_calibrate); nothing changed"),
            },
            "schemas": {
                "Setup": {"type": "object", "required": ["players"],
                          "additionalProperties": False, "properties": {
                              "players": {"type": "array", "items": {"type": "string"},
                                          "minItems": 1, "maxItems": 8},
                              "rules": {"type": "string", "enum": list(RULESETS)},
                              "variants": {"type": "array", "items": {
                                  "type": "string", "enum": list(VARIANTS)}},
                              "columns": {"type": "array", "items": {
                                  "type": "string", "enum": list(COLUMN_KINDS)}},
                              "replaces": REPLACES}},
                "Record": {"type": "object", "description": "kniffel-record/1 (README)",
                           "required": ["format", "rules", "players"],
                           "properties": {"format": {"const": "kniffel-record/1"}}},
                "Block": {"type": "object", "description": "as `kniffel replay --json`",
                          "properties": {"rules": {"type": "string"},
                                         "variants": {"type": "array"},
                                         "columns": {"type": "array"},
                                         "finished": {"type": "boolean"},
                                         "winners": {"type": "array"},
                                         "players": {"type": "array"},
                                         "turn": {"type": ["object", "null"]}}},
                "TableState": {"type": "object", "properties": {
                    "game": {"type": "object", "properties": {
                        "id": {"type": "integer"}, "version": {"type": "integer"},
                        "setup": _ref("Setup")}},
                    "block": _ref("Block"),
                    "sheet": {"type": "object"},
                    "pending": {"type": ["object", "null"],
                                "description": "a throw the camera could not trust: "
                                               "`flags` per die, `problems` what else needs "
                                               "a look; `count`: {seen, expected} where "
                                               "the count of dice is off; `foreign`: "
                                               "[{die (from 1), shows}] dice read as a face "
                                               "the game's dice lack; `teach_here`: the "
                                               "taught dice set recognised none of its dice "
                                               "(other light or camera), so teaching it "
                                               "here too (Calibrate) helps; `other_kind`: "
                                               "\"animals\" or \"pips\" where the dice "
                                               "look like that kind, not the game's "
                                               "(a game of the other edition for them)"},
                    "last_throw": {"type": ["object", "null"]},
                    "suggested": {"type": ["object", "null"]},
                    "undo": {"type": ["object", "null"]},
                    "camera": {"type": "object"},
                    "notice": {"type": ["object", "null"]},
                    "boot": {"type": "string",
                             "description": "this run of the service (seq counts within it)"},
                    "seq": {"type": "integer",
                            "description": "which state the service published last: of two "
                                           "states of one boot, the higher seq is newer"}}},
                "GameSummary": {"type": "object"},
                "Calibration": {"type": "object", "properties": {
                    "camera": {"type": "object", "properties": {
                        "kind": {"type": "string"}, "available": {"type": "boolean"},
                        "controls": {"type": "boolean"}, "state": {"type": "string"},
                        "message": {"type": "string"}}},
                    "size": {"type": "array", "items": {"type": "integer"},
                             "description": "main-stream width and height: areas are in "
                                            "these pixels"},
                    "throw_area": POINTS, "keep_area": POINTS,
                    "exposure": {"type": ["object", "null"],
                                 "description": "locked values; null: automatic"},
                    "lens_position": {"type": ["number", "null"],
                                      "description": "dioptres; null: automatic"},
                    "turn": {"enum": list(TURN_DEGREES),
                             "description": "degrees clockwise the reader turns the "
                                            "picture upright"},
                    "dice_set": {"type": "string"},
                    "faces": {"type": "object", "description": "pips and animals"},
                    "taught_sets": {"type": "object", "description": "the dice sets taught "
                                    "here, each with its faces", "additionalProperties": {
                                        "type": "array", "items": FACE}},
                    "learn": {"type": "boolean", "description": "whether taught sets learn "
                              "the table from the throws people check (table.learn)"},
                    "learnt": {"type": "object", "description": "the dice each set learnt "
                               "at tables (sets that learnt none are left out)",
                               "additionalProperties": {"type": "integer"}},
                    "config": {"type": "string", "description": "the config.toml written"}}},
                "Session": {"type": "object", "properties": {
                    "joined": {"type": "boolean"}, "phone": {"type": ["object", "null"]}}},
            },
        },
    }
