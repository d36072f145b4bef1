"""Build-time script: render the animal art sheets into `vision/assets/<set>.png`.

The art comes from Debian's Noto Color Emoji font (package fonts-noto-color-emoji,
SIL Open Font License 1.1).  The run-time renderer (`vision/synth/`) only loads the
resulting PNG with OpenCV; Pillow is needed here only.

    python models/make_animal_art.py [--font /usr/share/fonts/truetype/noto/NotoColorEmoji.ttf]

Each sheet is one row of 6 RGBA cells of CELL x CELL pixels in the order of
`vision.synth.model.ART_SETS`: `animals` are the Kniffel Kids faces (duck, lion, mouse, cat,
dog, elephant) that the models learn; `farm` (frog, pig, monkey, chicken, rabbit, bear) is
never trained on and stands for an unseen dice set in the teach evaluation.
"""

from __future__ import annotations

import argparse
import json
import subprocess
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFont

ROOT = Path(__file__).resolve().parents[1]
FONT = Path("/usr/share/fonts/truetype/noto/NotoColorEmoji.ttf")
CELL = 128
# Face-like emoji where the font has one; duck and elephant only exist as full bodies.
EMOJI: dict[str, str] = {
    "duck": "\U0001F986",      # 🦆
    "lion": "\U0001F981",      # 🦁 lion face
    "mouse": "\U0001F42D",     # 🐭 mouse face
    "cat": "\U0001F431",       # 🐱 cat face
    "dog": "\U0001F436",       # 🐶 dog face
    "elephant": "\U0001F418",  # 🐘
    "frog": "\U0001F438",      # 🐸 frog face
    "pig": "\U0001F437",       # 🐷 pig face
    "monkey": "\U0001F435",    # 🐵 monkey face
    "chicken": "\U0001F414",   # 🐔
    "rabbit": "\U0001F430",    # 🐰 rabbit face
    "bear": "\U0001F43B",      # 🐻 bear face
}
SETS: dict[str, tuple[str, ...]] = {
    "animals": ("duck", "lion", "mouse", "cat", "dog", "elephant"),
    "farm": ("frog", "pig", "monkey", "chicken", "rabbit", "bear"),
}


def render_glyph(font: ImageFont.FreeTypeFont, char: str) -> Image.Image:
    """Draw one emoji, crop to its alpha, fit into a CELL x CELL transparent cell."""
    canvas = Image.new("RGBA", (160, 160), (0, 0, 0, 0))
    ImageDraw.Draw(canvas).text((10, 10), char, font=font, embedded_color=True)
    bbox = canvas.getchannel("A").getbbox()
    if bbox is None:
        raise RuntimeError(f"font has no glyph for {char!r}")
    glyph = canvas.crop(bbox)
    margin = 4
    scale = (CELL - 2 * margin) / max(glyph.size)
    size = (max(1, round(glyph.size[0] * scale)), max(1, round(glyph.size[1] * scale)))
    glyph = glyph.resize(size, Image.Resampling.LANCZOS)
    cell = Image.new("RGBA", (CELL, CELL), (0, 0, 0, 0))
    cell.paste(glyph, ((CELL - size[0]) // 2, (CELL - size[1]) // 2), glyph)
    return cell


def font_version() -> str:
    try:
        out = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "fonts-noto-color-emoji"],
                             capture_output=True, text=True, check=True)
        return out.stdout.strip() or "unknown"
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


LICENSE_TEXT = """\
vision/assets/animals.png - animal art of the Kniffel Kids dice used by vision/synth/
vision/assets/farm.png - six other animals, only for the teach evaluation (an unseen set)

Source: Noto Color Emoji (Google), file {font}
        as shipped by Debian package fonts-noto-color-emoji, version {version}
        upstream https://github.com/googlefonts/noto-emoji
Glyphs: {glyphs}
Made by: models/make_animal_art.py (rendered, cropped, scaled to {cell}x{cell} RGBA cells)

Copyright 2013-2017 Google Inc.
The font (and therefore this derived image) is licensed under the SIL Open Font License,
Version 1.1 (https://openfontlicense.org). The full license text follows.

-----------------------------------------------------------
SIL OPEN FONT LICENSE Version 1.1 - 26 February 2007
-----------------------------------------------------------

PREAMBLE
The goals of the Open Font License (OFL) are to stimulate worldwide development of
collaborative font projects, to support the font creation efforts of academic and
linguistic communities, and to provide a free and open framework in which fonts may be
shared and improved in partnership with others.

The OFL allows the licensed fonts to be used, studied, modified and redistributed freely
as long as they are not sold by themselves. The fonts, including any derivative works, can
be bundled, embedded, redistributed and/or sold with any software provided that any
reserved names are not used by derivative works. The fonts and derivatives, however, cannot
be released under any other type of license. The requirement for fonts to remain under
this license does not apply to any document created using the fonts or their derivatives.

DEFINITIONS
"Font Software" refers to the set of files released by the Copyright Holder(s) under this
license and clearly marked as such. This may include source files, build scripts and
documentation.

"Reserved Font Name" refers to any names specified as such after the copyright
statement(s).

"Original Version" refers to the collection of Font Software components as distributed by
the Copyright Holder(s).

"Modified Version" refers to any derivative made by adding to, deleting, or substituting --
in part or in whole -- any of the components of the Original Version, by changing formats
or by porting the Font Software to a new environment.

"Author" refers to any designer, engineer, programmer, technical writer or other person who
contributed to the Font Software.

PERMISSION & CONDITIONS
Permission is hereby granted, free of charge, to any person obtaining a copy of the Font
Software, to use, study, copy, merge, embed, modify, redistribute, and sell modified and
unmodified copies of the Font Software, subject to the following conditions:

1) Neither the Font Software nor any of its individual components, in Original or Modified
Versions, may be sold by itself.

2) Original or Modified Versions of the Font Software may be bundled, redistributed and/or
sold with any software, provided that each copy contains the above copyright notice and
this license. These can be included either as stand-alone text files, human-readable
headers or in the appropriate machine-readable metadata fields within text or binary files
as long as those fields can be easily viewed by the user.

3) No Modified Version of the Font Software may use the Reserved Font Name(s) unless
explicit written permission is granted by the corresponding Copyright Holder. This
restriction only applies to the primary font name as presented to the users.

4) The name(s) of the Copyright Holder(s) and the Author(s) of the Font Software shall not
be used to promote, endorse or advertise any Modified Version, except to acknowledge the
contribution(s) of the Copyright Holder(s) and the Author(s) or with their explicit
written permission.

5) The Font Software, modified or unmodified, in part or in whole, must be distributed
entirely under this license, and must not be distributed under any other license. The
requirement for fonts to remain under this license does not apply to any document created
using the Font Software.

TERMINATION
This license becomes null and void if any of the above conditions are not met.

DISCLAIMER
THE FONT SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR IMPLIED,
INCLUDING BUT NOT LIMITED TO ANY WARRANTIES OF MERCHANTABILITY, FITNESS FOR A PARTICULAR
PURPOSE AND NONINFRINGEMENT OF COPYRIGHT, PATENT, TRADEMARK, OR OTHER RIGHT. IN NO EVENT
SHALL THE COPYRIGHT HOLDER BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER LIABILITY, INCLUDING
ANY GENERAL, SPECIAL, INDIRECT, INCIDENTAL, OR CONSEQUENTIAL DAMAGES, WHETHER IN AN ACTION
OF CONTRACT, TORT OR OTHERWISE, ARISING FROM, OUT OF THE USE OR INABILITY TO USE THE FONT
SOFTWARE OR FROM OTHER DEALINGS IN THE FONT SOFTWARE.
"""


#: Emoji blocks the identity pool is drawn from.
POOL_BLOCKS = ((0x1F300, 0x1F5FF), (0x1F600, 0x1F64F), (0x1F680, 0x1F6FF), (0x1F900, 0x1F9FF),
               (0x1FA70, 0x1FAFF), (0x2600, 0x26FF))
#: Never in the pool: the Kids faces and the unseen 'farm' set with their other drawings
#: (the teach evaluation must stay on art the models have never seen).
POOL_EXCLUDED = frozenset({
    *map(ord, EMOJI.values()),
    0x1F425, 0x1F424, 0x1F423, 0x1F413, 0x1F426, 0x1F427, 0x1F985, 0x1F54A,  # birds
    0x1F416, 0x1F43D, 0x1F417,  # pig, pig nose, boar
    0x1F412, 0x1F648, 0x1F649, 0x1F64A, 0x1F98D, 0x1F9A7,  # monkeys, apes
    0x1F407, 0x1F43C, 0x1F428, 0x1F9F8,  # rabbit, panda, koala, teddy bear
    0x1F981, 0x1F405, 0x1F406, 0x1F42F, 0x1F408, 0x1F63A, 0x1F638, 0x1F639, 0x1F63B,
    0x1F63C, 0x1F63D, 0x1F640, 0x1F63F, 0x1F63E,  # lion, tigers, cats
    0x1F415, 0x1F429, 0x1F9AE, 0x1F43A, 0x1F98A,  # dogs, wolf, fox
    0x1F401, 0x1F400, 0x1F439,  # mice, rats, hamster
    0x1F9A3, 0x1F98F,  # mammoth, rhinoceros
})


def write_sheet(cells: list[Image.Image], path: Path) -> None:
    sheet = Image.new("RGBA", (CELL * len(cells), CELL), (0, 0, 0, 0))
    for i, cell in enumerate(cells):
        sheet.paste(cell, (i * CELL, 0))
    # Fully transparent pixels carry no colour: zero them so the PNG compresses well.
    arr = np.array(sheet)
    arr[arr[..., 3] == 0] = 0
    Image.fromarray(arr, "RGBA").save(path, optimize=True)


def write_pool(font: ImageFont.FreeTypeFont, out: Path, faces_per_set: int = 6) -> int:
    """Training-only art: every other emoji of the font, six to a sheet, with `pool.json`
    ({set name: [face names]}) for vision.synth.register_art_sets. The face classifier's
    embedding learns to tell these hundreds of faces apart, so that `kniffel teach` can
    tell apart the faces of dice sets nobody has trained on."""
    out.mkdir(parents=True, exist_ok=True)
    cells: list[tuple[str, Image.Image]] = []
    for first, last in POOL_BLOCKS:
        for cp in range(first, last + 1):
            if cp in POOL_EXCLUDED:
                continue
            try:
                cell = render_glyph(font, chr(cp))
            except RuntimeError:
                continue  # no glyph
            if cell.getchannel("A").getbbox() is None:
                continue
            cells.append((f"u{cp:x}", cell))
    sets: dict[str, list[str]] = {}
    for k in range(len(cells) // faces_per_set):
        chunk = cells[k * faces_per_set:(k + 1) * faces_per_set]
        name = f"pool{k:03d}"
        write_sheet([c for _, c in chunk], out / f"{name}.png")
        sets[name] = [n for n, _ in chunk]
    (out / "pool.json").write_text(json.dumps(sets, indent=0), encoding="utf-8")
    return sum(len(v) for v in sets.values())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--font", type=Path, default=FONT)
    ap.add_argument("--out", type=Path, default=ROOT / "vision" / "assets")
    ap.add_argument("--pool", type=Path, default=None, metavar="DIR",
                    help="instead: write the training-only identity pool into DIR")
    args = ap.parse_args()
    # Noto Color Emoji is a bitmap (CBDT) font that only exists at size 109.
    font = ImageFont.truetype(str(args.font), 109)
    if args.pool is not None:
        print(f"wrote {write_pool(font, args.pool)} pool faces to {args.pool}")
        return
    args.out.mkdir(parents=True, exist_ok=True)
    for set_name, order in SETS.items():
        write_sheet([render_glyph(font, EMOJI[name]) for name in order],
                    args.out / f"{set_name}.png")
        print(f"wrote {args.out / f'{set_name}.png'} ({CELL * len(order)}x{CELL})")
    glyphs = ", ".join(f"{n} U+{ord(c):04X}" for n, c in EMOJI.items())
    (args.out / "ANIMALS-LICENSE.txt").write_text(
        LICENSE_TEXT.format(font=args.font, version=font_version(), glyphs=glyphs, cell=CELL),
        encoding="utf-8")


if __name__ == "__main__":
    main()
