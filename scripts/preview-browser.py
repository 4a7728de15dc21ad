#!/usr/bin/env python3
"""Drives the preview page in Debian's headless Chromium through Playwright (tests use it).

    scripts/preview-browser.py URL OUTDIR [--click RATIO|shutter|record|zoom|marker|mode|gallery|sound | --follow FILE]

Opens URL (the page's address with its token, as the `preview:` line prints it: the page
sets its cookie), waits until the live picture shows (the <img> has decoded a JPEG), saves the
picture as OUTDIR/picture.png (an element screenshot, at the picture's natural size) and the
whole page as OUTDIR/page.png; with --click it clicks that ratio button, waits for the
answer shown on the page and for the state line to show the new ratio, then saves
OUTDIR/after.png; --click shutter clicks the shutter button and waits for the answer shown
(`shutterStatus`, `shutterAnswer`: the photo's JSON) and for the photo's thumbnail to show
(`thumbnail`: its natural size); --click record clicks the record
button, waits for the answer, for the button to say `stop` and for 30 more frames in the state
line, then clicks it again and waits for the answer and the button to say `record` again
(`recordStart`, `recordStop`: status and JSON of each; `buttonWhileRecording`,
`stateWhileRecording`, `buttonAfter`); --click zoom moves the zoom slider to 2, waits for the
answer (`zoomStatus`, `zoomAnswer`) and for the state line to show `zoom 2×` from the status
stream (`stateAfter`, `sliderAfter`), picks `grayscale` in the effect picker and waits for
the answer (`effectStatus`, `effectAnswer`) and the state line (`stateAfterEffect`), saves the
whole page at 1280 px (OUTDIR/desktop.png), then narrows the window to 390x844 (`phoneWidths`:
the page's scroll width and the picture's width; OUTDIR/phone.png); every mode lists the
console's errors (`consoleErrors`: content-security-policy violations among them); --follow FILE waits until the state line shows `zoom 1×`,
writes FILE, and waits (60 s at most) until it shows `zoom 2×` without a reload
(`stateFollowed`): the test changes the zoom from elsewhere in between. Prints one JSON object: the screenshots' paths, the picture's natural size,
the state line before and after, and the ratio answer (the JSON the page got).
--click marker clicks the secondary button (`secondaryBefore`, `pressStatus`,
`secondaryAfter`: what it says before and after; a `lock` is waited for until it says `unlock`).
--click mode picks `photo` in the mode picker and waits for the answer (`modeStatus`,
`modeAnswer`, `modeOptions`, `modeAfter`: the picker's value once the status stream set it).
--click gallery clicks the record button (`stop`: the clip in progress finishes), waits for
the gallery to list a clip (`galleryStop`: the answer's status), then for every item's
thumbnail, plays the first <video> (muted) and waits until it has played 0.5 s or to its
end (`video`: readyState, currentTime, duration, error, src, poster, ended), then lists the items as shown
(`galleryItems`: id, kind, the meta line, the download link, whether it has a <video>, the
thumbnail's natural size) and saves OUTDIR/gallery.png, then at 390x844 (`galleryPhoneWidths`:
the page's scroll width and the gallery's width; OUTDIR/gallery-phone.png).
--click sound waits until the level meter shows, then reads it 20 times, 250 ms apart
(`levels`: each [the meter's value, its text, the state line]) and saves OUTDIR/sound.png.
Every mode says whether the level meter is hidden (`levelHidden`, as the page first showed).
Exit 0, or 1 with the reason on stderr.
"""
import json
import sys

from playwright.sync_api import sync_playwright


def answered(page, timeout):
    """Waits until the page shows the answer to its request (#r's data-status set), and
    returns its status and its JSON (or the text when it is not JSON)."""
    page.wait_for_function("() => (document.getElementById('r').dataset.status || '') !== ''", timeout=timeout)
    answer = page.inner_text("#r")
    status = int(page.evaluate("() => document.getElementById('r').dataset.status"))
    return status, json.loads(answer.split(" ", 2)[2]) if answer.count(" ") >= 2 else answer


def main(argv):
    if len(argv) not in (3, 5) or (len(argv) == 5 and argv[3] not in ("--click", "--follow")):
        print(__doc__, file=sys.stderr)
        return 64
    url, out = argv[1], argv[2]
    ratio = argv[4] if len(argv) == 5 and argv[3] == "--click" else None
    follow = argv[4] if len(argv) == 5 and argv[3] == "--follow" else None
    result = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox", "--disable-gpu"])
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 1100})
            # What the browser refused or failed (a content-security-policy violation is one).
            result["consoleErrors"] = []
            page.on("console", lambda m: result["consoleErrors"].append(m.text) if m.type == "error" else None)
            page.goto(url)
            page.wait_for_function("() => { const i = document.getElementById('p'); return i.naturalWidth > 0; }",
                                   timeout=15000)
            page.wait_for_function("() => document.getElementById('s').textContent.includes('frames')", timeout=15000)
            result["natural"] = page.evaluate("() => { const i = document.getElementById('p'); return [i.naturalWidth, i.naturalHeight]; }")
            result["stateBefore"] = page.inner_text("#s")
            result["levelHidden"] = page.evaluate("() => document.getElementById('f-level').hidden")
            result["picture"] = f"{out}/picture.png"
            page.locator("#p").screenshot(path=result["picture"])
            result["page"] = f"{out}/page.png"
            page.screenshot(path=result["page"])
            if follow:
                # The page follows a change made elsewhere, without a reload: it shows zoom 1×,
                # says so in the file FOLLOW, and waits (60 s at most) until it shows zoom 2×.
                page.wait_for_function("() => document.getElementById('s').textContent.includes('zoom 1×')", timeout=30000)
                result["stateBefore"] = page.inner_text("#s")
                with open(follow, "w") as f:
                    f.write("ready\n")
                page.wait_for_function("() => document.getElementById('s').textContent.includes('zoom 2×')", timeout=60000)
                result["stateFollowed"] = page.inner_text("#s")
            elif ratio == "record":
                frames = "() => { const m = document.getElementById('s').textContent.match(/ (\\d+) frames/); return m ? +m[1] : -1; }"
                for step in ("recordStart", "recordStop"):
                    page.evaluate("() => { document.getElementById('r').dataset.status = ''; }")
                    page.click("#record")
                    result[step] = list(answered(page, 30000))
                    if step == "recordStart":
                        page.wait_for_function("() => document.getElementById('record').textContent === 'stop'", timeout=30000)
                        result["buttonWhileRecording"] = page.inner_text("#record")
                        result["stateWhileRecording"] = page.inner_text("#s")
                        now = page.evaluate(frames)
                        page.wait_for_function(f"() => ({frames})() >= {now + 30}", timeout=60000)
                page.wait_for_function("() => document.getElementById('record').textContent === 'record'", timeout=30000)
                result["buttonAfter"] = page.inner_text("#record")
            elif ratio == "zoom":
                # The zoom slider moved to 2 (as a finger does: input, then change): the page
                # POSTs /control, shows the answer, and the status stream brings zoom 2× back
                # to the state line and the slider. Then the page at phone size (390x844).
                page.wait_for_function("() => !document.getElementById('zoom-row').hidden", timeout=15000)
                page.fill("#zoom", "2")
                result["zoomStatus"], result["zoomAnswer"] = answered(page, 15000)
                page.wait_for_function("() => document.getElementById('s').textContent.includes('zoom 2×')", timeout=15000)
                result["stateAfter"] = page.inner_text("#s")
                result["sliderAfter"] = page.evaluate("() => +document.getElementById('zoom').value")
                # Then the effect picker: grayscale.
                page.wait_for_function("() => !document.getElementById('effect-row').hidden", timeout=15000)
                page.evaluate("() => { document.getElementById('r').dataset.status = ''; }")
                page.select_option("#effect", label="grayscale")
                result["effectStatus"], result["effectAnswer"] = answered(page, 15000)
                page.wait_for_function("() => document.getElementById('s').textContent.includes('effect grayscale')", timeout=15000)
                result["stateAfterEffect"] = page.inner_text("#s")
                # Rows of controls this camera lacks (no photo output: no mode; no smart framing:
                # no toggles) are not displayed.
                result["absentRows"] = page.evaluate(
                    "() => ['mode-row', 'framing-row'].map(id => getComputedStyle(document.getElementById(id)).display)")
                result["desktop"] = f"{out}/desktop.png"
                page.screenshot(path=result["desktop"], full_page=True)
                page.set_viewport_size({"width": 390, "height": 844})
                result["phoneWidths"] = page.evaluate(
                    "() => [document.documentElement.scrollWidth, document.getElementById('p').getBoundingClientRect().width]")
                result["phone"] = f"{out}/phone.png"
                page.screenshot(path=result["phone"], full_page=True)
            elif ratio == "marker":
                # The secondary button: what it says (marker, lock), a click, the answer, and
                # what it says once the status stream brought the new state (lock → unlock).
                result["secondaryBefore"] = page.inner_text("#marker")
                page.evaluate("() => { document.getElementById('r').dataset.status = ''; }")
                page.click("#marker")
                page.wait_for_function("() => (document.getElementById('r').dataset.status || '') !== ''", timeout=15000)
                result["pressStatus"] = int(page.evaluate("() => document.getElementById('r').dataset.status"))
                if result["secondaryBefore"] == "lock":
                    page.wait_for_function("() => document.getElementById('marker').textContent === 'unlock'", timeout=15000)
                result["secondaryAfter"] = page.inner_text("#marker")
            elif ratio == "framing":
                # Smart framing's toggles (with --smart-framing zoom,rotate): both boxes on;
                # a click turns Auto Zoom off — the answer (the `framing` picker: rotate), then
                # the boxes as the status stream leaves them.
                page.wait_for_function("() => !document.getElementById('framing-row').hidden", timeout=30000)
                result["framingBefore"] = page.evaluate(
                    "() => [document.getElementById('auto-zoom').checked, document.getElementById('auto-rotate').checked]")
                page.evaluate("() => { document.getElementById('r').dataset.status = ''; }")
                page.click("#auto-zoom")
                result["framingStatus"], result["framingAnswer"] = answered(page, 15000)
                page.wait_for_function("""() => typeof newest !== 'undefined' && newest !== null &&
                    (newest.controls || []).some(c => c.identifier === 'framing' && c.title === 'rotate')""", timeout=15000)
                result["framingAfter"] = page.evaluate(
                    "() => [document.getElementById('auto-zoom').checked, document.getElementById('auto-rotate').checked]")
                result["framingShot"] = f"{out}/framing.png"
                page.screenshot(path=result["framingShot"], full_page=True)
            elif ratio == "mode":
                # The mode picker (with a photo output): photo. The answer, then the picker as
                # the status stream sets it (`modeAfter`), and the options it offers.
                page.wait_for_function("() => !document.getElementById('mode-row').hidden", timeout=15000)
                page.evaluate("() => { document.getElementById('r').dataset.status = ''; }")
                page.select_option("#mode", label="photo")
                result["modeStatus"], result["modeAnswer"] = answered(page, 15000)
                result["modeOptions"] = page.evaluate("() => [...document.getElementById('mode').options].map(o => o.value)")
                # The status stream's next state says photo (the page's `newest`), and the picker shows it.
                page.wait_for_function("""() => typeof newest !== 'undefined' && newest !== null &&
                    (newest.controls || []).some(c => c.identifier === 'mode' && c.title === 'photo')""", timeout=15000)
                result["modeAfter"] = page.evaluate("() => document.getElementById('mode').value")
            elif ratio == "gallery":
                page.evaluate("() => { document.getElementById('r').dataset.status = ''; }")
                page.click("#record")
                page.wait_for_function("() => (document.getElementById('r').dataset.status || '') !== ''", timeout=30000)
                result["galleryStop"] = int(page.evaluate("() => document.getElementById('r').dataset.status"))
                page.wait_for_function("() => document.querySelector('#g-list li[data-kind=clip]') !== null", timeout=60000)
                page.wait_for_function("""() => [...document.querySelectorAll('#g-list li')].every(li => {
                    const i = li.querySelector('img'); return i ? i.complete && i.naturalWidth > 0 : true; })""", timeout=30000)
                page.evaluate("() => { const v = document.querySelector('#g-list video'); if (v) { v.muted = true; v.play(); } }")
                page.wait_for_function("() => { const v = document.querySelector('#g-list video'); return v && (v.error || v.currentTime >= 0.5 || v.ended); }",
                                       timeout=30000)
                result["video"] = page.evaluate("""() => { const v = document.querySelector('#g-list video');
                    return {readyState: v.readyState, currentTime: v.currentTime, duration: v.duration,
                            error: v.error ? v.error.code : null, src: v.getAttribute('src'), poster: v.getAttribute('poster'),
                            width: v.videoWidth, height: v.videoHeight,
                            ended: v.ended}; }""")
                result["galleryItems"] = page.evaluate("""() => [...document.querySelectorAll('#g-list li')].map(li => {
                    const i = li.querySelector('img'), a = li.querySelector('a');
                    return {id: li.dataset.id, kind: li.dataset.kind, meta: li.querySelector('.meta').textContent,
                            download: a.getAttribute('href'), video: li.querySelector('video') !== null,
                            thumbnail: i ? [i.naturalWidth, i.naturalHeight] : null}; })""")
                result["galleryCount"] = page.inner_text("#g-count")
                result["gallery"] = f"{out}/gallery.png"
                page.screenshot(path=result["gallery"], full_page=True)
                page.set_viewport_size({"width": 390, "height": 844})
                result["galleryPhoneWidths"] = page.evaluate(
                    "() => [document.documentElement.scrollWidth, document.getElementById('gallery').getBoundingClientRect().width]")
                result["galleryPhone"] = f"{out}/gallery-phone.png"
                page.screenshot(path=result["galleryPhone"], full_page=True)
            elif ratio == "sound":
                # The level meter: it shows once the status stream brings a level; then 20
                # readings a quarter second apart (the stream refreshes the counters at 4 Hz).
                page.wait_for_function("() => !document.getElementById('f-level').hidden", timeout=15000)
                result["levels"] = []
                for _ in range(20):
                    result["levels"].append(page.evaluate(
                        "() => [document.getElementById('level').value, document.getElementById('level-v').textContent, document.getElementById('s').textContent]"))
                    page.wait_for_timeout(250)
                result["sound"] = f"{out}/sound.png"
                page.screenshot(path=result["sound"])
            elif ratio == "shutter":
                page.click("#shutter")
                result["shutterStatus"], result["shutterAnswer"] = answered(page, 30000)
                # The status stream names the photo; its thumbnail shows under the picture.
                page.wait_for_function("() => { const t = document.getElementById('thumb'); return !t.hidden && t.naturalWidth > 0; }",
                                       timeout=15000)
                result["thumbnail"] = page.evaluate("() => { const t = document.getElementById('thumb'); return [t.naturalWidth, t.naturalHeight]; }")
            elif ratio:
                page.click(f"button[data-r='{ratio}']")
                result["ratioStatus"], result["ratioAnswer"] = answered(page, 15000)
                page.wait_for_function(f"() => document.getElementById('s').textContent.includes(' {ratio}')", timeout=15000)
                result["stateAfter"] = page.inner_text("#s")
                page.wait_for_function("() => { const i = document.getElementById('p'); return i.naturalWidth < i.naturalHeight; }"
                                       if ratio == "9x16" else "() => true", timeout=15000)
                result["naturalAfter"] = page.evaluate("() => { const i = document.getElementById('p'); return [i.naturalWidth, i.naturalHeight]; }")
                result["after"] = f"{out}/after.png"
                page.locator("#p").screenshot(path=result["after"])
        except Exception as e:  # a timeout: say what the page showed
            print(f"preview-browser: {e}", file=sys.stderr)
            return 1
        finally:
            browser.close()
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
